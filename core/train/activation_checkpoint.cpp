#include "train/activation_checkpoint.h"

#include "train/llama_model.h"

#include <mutex>

namespace tb::train {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// What the recompute needs, kept alive by the autograd graph until backward.
struct LayerCall : torch::CustomClassHolder {
    DecoderLayer* layer = nullptr;
    AttentionInputs inputs;
    std::optional<at::Generator> generator;
    torch::Tensor generatorState; // at the start of the layer's forward
};

torch::Tensor generatorState(at::Generator& generator)
{
    std::lock_guard<std::mutex> lock(generator.mutex());
    return generator.get_state();
}

void setGeneratorState(at::Generator& generator, const torch::Tensor& state)
{
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
}

class CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
public:
    static torch::Tensor forward(
        AutogradContext* ctx, const torch::Tensor& hidden, c10::intrusive_ptr<LayerCall> call)
    {
        if (call->generator)
            call->generatorState = generatorState(*call->generator);
        ctx->save_for_backward({hidden});
        torch::Tensor out = call->layer->forward(hidden, call->inputs, nullptr);
        ctx->saved_data["call"] = c10::IValue::make_capsule(call);
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list outputGradients)
    {
        auto call =
            c10::static_intrusive_pointer_cast<LayerCall>(ctx->saved_data["call"].toCapsule());
        const torch::Tensor input = ctx->get_saved_variables()[0].detach().requires_grad_(true);
        torch::Tensor after;
        if (call->generator) {
            after = generatorState(*call->generator);
            setGeneratorState(*call->generator, call->generatorState);
        }
        torch::Tensor output;
        {
            torch::AutoGradMode enable(true);
            output = call->layer->forward(input, call->inputs, nullptr);
        }
        if (call->generator)
            setGeneratorState(*call->generator, after);
        torch::autograd::backward({output}, {outputGradients[0]});
        return {input.grad(), torch::Tensor()};
    }
};

} // namespace

void enableActivationCheckpointing(
    LlamaForCausalLm& model, std::optional<at::Generator> dropoutGenerator)
{
    model.setLayerRunner([dropoutGenerator](DecoderLayer& layer, const torch::Tensor& hidden,
                             const AttentionInputs& inputs, LayerCache* cache) {
        if (cache || !torch::GradMode::is_enabled() || !layer.is_training())
            return layer.forward(hidden, inputs, cache);
        auto call = c10::make_intrusive<LayerCall>();
        call->layer = &layer;
        call->inputs = inputs;
        call->generator = dropoutGenerator;
        // The function needs an input that requires grad to be recorded at
        // all; under LoRA the embeddings are frozen, so mark the hidden
        // states (their gradient is then computed and dropped at the bottom).
        const torch::Tensor input =
            hidden.requires_grad() ? hidden : hidden.detach().requires_grad_(true);
        return CheckpointedLayer::apply(input, call);
    });
}

void disableActivationCheckpointing(LlamaForCausalLm& model)
{
    model.setLayerRunner({});
}

} // namespace tb::train
