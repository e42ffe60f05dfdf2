#include "train/training_session.h"

#include "data/random.h"
#include "train/activation_checkpoint.h"
#include "train/llama_model.h"
#include "train/model_loader.h"
#include "train/nf4.h"
#include "train/peft_adapter.h"
#include "train/training_device.h"

#include <algorithm>
#include <set>

namespace tb::train {

using common::Error;

namespace {

void report(const TrainerOptions& options, std::string message)
{
    if (!options.progress)
        return;
    TrainerProgress progress;
    progress.kind = TrainerProgress::Kind::Setup;
    progress.message = std::move(message);
    options.progress(progress);
}

// Replaces every projection of the blocks with its NF4 form, quantised from
// the fp32 `base` (more exact than from a bf16 copy).
std::int64_t quantizeProjections(LlamaForCausalLm& model, LlamaForCausalLm& base)
{
    torch::NoGradGuard noGrad;
    std::int64_t bytes = 0;
    auto baseProjections = base.projections();
    for (auto& [name, layer] : baseProjections) {
        auto dense = std::dynamic_pointer_cast<DenseLinear>(layer);
        TORCH_CHECK(dense, name, " is not a dense projection");
        Nf4Tensor weight = quantizeNf4(dense->weight());
        bytes += weight.storageBytes();
        torch::Tensor bias = dense->bias().defined()
            ? dense->bias().detach().to(model.dtype()).clone()
            : torch::Tensor();
        model.replaceProjection(name, std::make_shared<Nf4Linear>(std::move(weight), bias));
    }
    return bytes;
}

// Every tensor of the model that does not train: frozen parameters and
// buffers (NF4 codes and scales).
std::vector<std::pair<std::string, torch::Tensor>> frozenTensors(LlamaForCausalLm& model)
{
    std::vector<std::pair<std::string, torch::Tensor>> frozen;
    for (auto& item : model.named_parameters()) {
        if (!item.value().requires_grad())
            frozen.emplace_back(item.key(), item.value());
    }
    for (auto& item : model.named_buffers())
        frozen.emplace_back(item.key(), item.value());
    return frozen;
}

std::int64_t distinctBytes(const std::vector<std::pair<std::string, torch::Tensor>>& tensors)
{
    std::set<const void*> seen;
    std::int64_t bytes = 0;
    for (const auto& [name, tensor] : tensors) {
        if (seen.insert(tensor.unsafeGetTensorImpl()).second)
            bytes += static_cast<std::int64_t>(tensor.nbytes());
    }
    return bytes;
}

common::Status checkAdapterMatches(
    const LoraSpec& adapter, const LoraSpec& run, const std::string& dir)
{
    std::set<std::string> a(adapter.targetModules.begin(), adapter.targetModules.end());
    std::set<std::string> b(run.targetModules.begin(), run.targetModules.end());
    if (adapter.rank != run.rank || a != b || adapter.scaling() != run.scaling())
        return Error::at(dir + "/adapter_config.json", "",
            "the adapter (r " + std::to_string(adapter.rank) + ", alpha "
                + std::to_string(adapter.alpha) + ", " + std::to_string(a.size())
                + " target modules) does not match the run's lora settings (r "
                + std::to_string(run.rank) + ", alpha " + std::to_string(run.alpha) + ", "
                + std::to_string(b.size()) + " target modules)",
            "set lora.rank, lora.alpha and lora.target_modules to the adapter's");
    return common::Ok{};
}

} // namespace

std::uint64_t dropoutSeed(std::uint64_t trainingSeed, int rank, std::int64_t step)
{
    return data::deriveSeed(trainingSeed,
        kDropoutStream + static_cast<std::uint64_t>(rank) * 1000
            + static_cast<std::uint64_t>(step) * 1000003);
}

torch::ScalarType computeTypeOf(config::Precision precision)
{
    return precision == config::Precision::Fp32 ? torch::kFloat : torch::kBFloat16;
}

torch::ScalarType masterTypeOf(config::Precision precision)
{
    return precision == config::Precision::Bf16 ? torch::kBFloat16 : torch::kFloat;
}

common::Status prepareTrainableModel(TrainingSession& session,
    const std::shared_ptr<LlamaForCausalLm>& base, const std::string& initAdapter, ShardSpec shard,
    int rank)
{
    const config::RunConfig& config = session.config;
    const torch::ScalarType computeType = computeTypeOf(config.precision);
    try {
        std::shared_ptr<LlamaForCausalLm> model = base;
        if (computeType != base->dtype()) {
            model = createCausalLm(base->config(),
                computeType == torch::kBFloat16 ? ComputeDType::BFloat16 : ComputeDType::Float32);
            torch::NoGradGuard noGrad;
            auto source = base->named_parameters();
            for (auto& item : model->named_parameters())
                item.value().copy_(source[item.key()]);
        }
        session.totalParameters = base->config().parameterCount();
        session.dropoutGenerator =
            makeGenerator(session.device, dropoutSeed(config.training.seed, rank));
        if (config.method == config::Method::Qlora)
            session.quantizedBytes = quantizeProjections(*model, *base);
        if (config.usesLora()) {
            session.lora.rank = config.lora.rank;
            session.lora.alpha = config.lora.alpha;
            session.lora.dropout = config.lora.dropout;
            session.lora.targetModules = config.lora.targetModules;
            auto attached = attachLora(*model, session.lora,
                data::deriveSeed(config.training.seed, kLoraInitStream), session.dropoutGenerator);
            if (!attached)
                return attached.error();
            if (!initAdapter.empty()) {
                auto adapter = readPeftAdapterConfig(initAdapter);
                if (!adapter)
                    return adapter.error();
                if (auto status = checkAdapterMatches(*adapter, session.lora, initAdapter); !status)
                    return status;
                if (auto status = loadPeftAdapter(*model, initAdapter); !status)
                    return status;
            }
            freezeAllButLora(*model);
        }
        // Built on the CPU (quantised from the fp32 base there), trained on
        // the session's device; NF4 codes move as buffers.
        model->to(session.device);

        std::vector<TrainableParameter> trainables;
        std::vector<torch::Tensor> initial;
        auto baseValues = base->named_parameters();
        const bool fromBase =
            !config.usesLora() && model != base && masterTypeOf(config.precision) == torch::kFloat;
        for (auto& item : model->named_parameters()) {
            if (!item.value().requires_grad())
                continue;
            // No decay on norms and biases (1-D), as Hugging Face's Trainer.
            trainables.push_back({item.key(), item.value(), item.value().dim() >= 2});
            if (fromBase)
                initial.push_back(baseValues[item.key()]);
            session.trainableParameters += item.value().numel();
        }
        // Offload moves the master and optimizer states to the host; with
        // sharded parameters (ZeRO-3, FSDP) nothing of a unit stays on the
        // GPU between uses, so optimizer+params needs nothing more.
        session.parameters = std::make_unique<FlatParameters>(std::move(trainables),
            masterTypeOf(config.precision), initial, shard,
            config.distributed.offload != config::Offload::None);
        // ZeRO-3 and FSDP shard what does not train as well: a rank holds
        // 1/N of the base between uses, as the planner counts it.
        const auto frozen = frozenTensors(*model);
        session.frozenBytes = distinctBytes(frozen);
        if (shard.parameters && shard.count > 1 && !frozen.empty())
            session.frozen = std::make_unique<FrozenShards>(frozen, shard,
                config.distributed.offload == config::Offload::OptimizerAndParams);
        const config::TrainingConfig& t = config.training;
        session.optimizer = std::make_unique<FlatAdamW>(*session.parameters,
            AdamWSettings{t.adamBeta1, t.adamBeta2, t.adamEpsilon, t.weightDecay});
        if (config.activationCheckpointing)
            enableActivationCheckpointing(*model, session.dropoutGenerator);
        model->train();
        session.model = model;
    } catch (const std::exception& e) {
        return Error::at(config.model, "", std::string("cannot set up the model: ") + e.what());
    }
    return common::Ok{};
}

common::Result<std::unique_ptr<TrainingSession>> buildSession(const config::RunConfig& config,
    const TrainerOptions& options, ShardSpec shard, int rank, const c10::Device& device)
{
    auto session = std::make_unique<TrainingSession>();
    session->config = config;
    session->device = device;

    report(options, "tokenizer " + config.tokenizer);
    auto tokenizer = tokenizer::Tokenizer::load(config.tokenizer);
    if (!tokenizer)
        return tokenizer.error();
    session->tokenizer = *tokenizer;
    session->padId = data::padIdFor(*tokenizer);

    report(options, "model " + config.model);
    auto base = loadCausalLm(config.model, ComputeDType::Float32);
    if (!base)
        return base.error();
    const std::int64_t vocab = (*base)->config().vocabSize;
    if (static_cast<std::int64_t>(tokenizer->vocabSize()) > vocab)
        return Error::at(config.tokenizer, "",
            "the tokenizer has " + std::to_string(tokenizer->vocabSize())
                + " tokens, more than the model's vocab_size " + std::to_string(vocab),
            "is this the model's own tokenizer?");

    report(options, "data: reading and tokenizing");
    data::PrepareCallbacks callbacks;
    callbacks.progress = [&](std::string_view, std::size_t, std::size_t) {
        return !(options.stopRequested && options.stopRequested->load());
    };
    auto prepared = data::prepareData(config, *tokenizer, callbacks);
    if (!prepared)
        return prepared.error();
    session->data = std::move(prepared).value();
    if (session->data.train.empty())
        return Error::at(config.data.trainFiles.empty() ? config.model : config.data.trainFiles[0],
            "", "no training example left after reading and tokenizing the data");

    report(options,
        "model: setting up " + std::string(config::toString(config.method)) + " in "
            + std::string(config::toString(config.precision)));
    if (auto status = prepareTrainableModel(*session, *base, options.initAdapter, shard, rank);
        !status)
        return status.error();
    return session;
}

} // namespace tb::train
