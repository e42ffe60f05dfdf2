#include "train/training_session.h"

#include "data/random.h"
#include "train/activation_checkpoint.h"
#include "train/llama_model.h"
#include "train/model_loader.h"
#include "train/nf4.h"
#include "train/peft_adapter.h"
#include "train/tensor_storage.h"
#include "train/training_device.h"
#include "train/weight_slices.h"

#include "safetensors/tensor_store.h"

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

// A sharded load's QLoRA base: every projection becomes an NF4 layer with
// no storage yet; WeightSlices quantises each when its unit is loaded.
std::int64_t deferQuantization(LlamaForCausalLm& model)
{
    std::int64_t bytes = 0;
    for (auto& [name, layer] : model.projections()) {
        auto dense = std::dynamic_pointer_cast<DenseLinear>(layer);
        TORCH_CHECK(dense, name, " is not a dense projection");
        Nf4Tensor weight =
            nf4WithoutStorage(dense->weight().sizes().vec(), dense->weight().device());
        bytes += weight.storageBytes();
        torch::Tensor bias = dense->bias().defined()
            ? tensorWithoutStorage(dense->bias().sizes(), dense->bias().options())
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
    const std::set<std::string> aParameters(
        adapter.targetParameters.begin(), adapter.targetParameters.end());
    const std::set<std::string> bParameters(
        run.targetParameters.begin(), run.targetParameters.end());
    if (adapter.rank != run.rank || a != b || aParameters != bParameters
        || adapter.scaling() != run.scaling())
        return Error::at(dir + "/adapter_config.json", "",
            "the adapter (r " + std::to_string(adapter.rank) + ", alpha "
                + std::to_string(adapter.alpha) + ", " + std::to_string(a.size())
                + " target modules, " + std::to_string(aParameters.size())
                + " target parameters) does not match the run's lora settings (r "
                + std::to_string(run.rank) + ", alpha " + std::to_string(run.alpha) + ", "
                + std::to_string(b.size()) + " target modules, "
                + std::to_string(bParameters.size()) + " target parameters)",
            "set lora.rank, lora.alpha, lora.target_modules and lora.target_parameters to the "
            "adapter's");
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

namespace {

// In a mixture of experts the MLP's target module names select nothing:
// the experts are adapted as fused weights through target_parameters, as
// peft does. Said, never silently dropped. Empty when nothing was left out.
std::string expertTargetsSkipped(LlamaForCausalLm& model, const LoraSpec& lora)
{
    std::string names;
    for (const std::string& target : expertOnlyTargets(model.config(), lora))
        names += (names.empty() ? "" : ", ") + target;
    if (names.empty())
        return {};
    return "lora.target_modules: " + names + " select the experts of this "
        + model.config().modelType
        + " model, which target_modules leave out: the experts are adapted only through "
          "lora.target_parameters (mlp.experts.gate_up_proj, mlp.experts.down_proj), as peft "
          "adapts them";
}

// LoRA layers over the (possibly NF4) projections, the adapter to start
// from, everything else frozen.
common::Status attachAdapters(
    TrainingSession& session, LlamaForCausalLm& model, const std::string& initAdapter)
{
    const config::RunConfig& config = session.config;
    session.lora.rank = config.lora.rank;
    session.lora.alpha = config.lora.alpha;
    session.lora.dropout = config.lora.dropout;
    session.lora.targetModules = config.lora.targetModules;
    session.lora.targetParameters = config.lora.targetParameters;
    auto attached = attachLora(model, session.lora,
        data::deriveSeed(config.training.seed, kLoraInitStream), session.dropoutGenerator);
    if (!attached)
        return attached.error();
    if (std::string skipped = expertTargetsSkipped(model, session.lora); !skipped.empty())
        session.warnings.push_back(std::move(skipped));
    if (!initAdapter.empty()) {
        auto adapter = readPeftAdapterConfig(initAdapter);
        if (!adapter)
            return adapter.error();
        // A target_modules pattern is compared by the names it selects.
        LoraSpec given = adapter.value();
        common::Result<std::vector<std::string>> targets = targetModuleNames(model, given);
        if (!targets)
            return Error::at(initAdapter + "/adapter_config.json", "field 'target_modules'",
                targets.error().message, targets.error().hint);
        given.targetModules = std::move(targets).value();
        if (auto status = checkAdapterMatches(given, session.lora, initAdapter); !status)
            return status;
        if (auto status = loadPeftAdapter(model, initAdapter); !status)
            return status;
    }
    freezeAllButLora(model);
    return common::Ok{};
}

std::vector<TrainableParameter> trainablesOf(TrainingSession& session, LlamaForCausalLm& model)
{
    std::vector<TrainableParameter> trainables;
    for (auto& item : model.named_parameters()) {
        if (!item.value().requires_grad())
            continue;
        // No decay on norms and biases (1-D), as Hugging Face's Trainer.
        trainables.push_back({item.key(), item.value(), item.value().dim() >= 2});
        session.trainableParameters += item.value().numel();
    }
    return trainables;
}

// The optimizer over the flat parameters, checkpointing, training mode.
void finishSession(TrainingSession& session, std::shared_ptr<LlamaForCausalLm> model)
{
    const config::TrainingConfig& t = session.config.training;
    session.optimizer = std::make_unique<FlatAdamW>(
        *session.parameters, AdamWSettings{t.adamBeta1, t.adamBeta2, t.adamEpsilon, t.weightDecay});
    if (session.config.activationCheckpointing)
        enableActivationCheckpointing(*model, session.dropoutGenerator);
    model->train();
    session.model = std::move(model);
}

ComputeDType computeDTypeOf(config::Precision precision)
{
    return computeTypeOf(precision) == torch::kBFloat16 ? ComputeDType::BFloat16
                                                        : ComputeDType::Float32;
}

} // namespace

common::Status prepareTrainableModel(TrainingSession& session,
    const std::shared_ptr<LlamaForCausalLm>& base, const std::string& initAdapter, ShardSpec shard,
    int rank)
{
    const config::RunConfig& config = session.config;
    const torch::ScalarType computeType = computeTypeOf(config.precision);
    try {
        std::shared_ptr<LlamaForCausalLm> model = base;
        if (computeType != base->dtype()) {
            model = createCausalLm(base->config(), computeDTypeOf(config.precision));
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
            if (auto status = attachAdapters(session, *model, initAdapter); !status)
                return status;
        }
        // Built on the CPU (quantised from the fp32 base there), trained on
        // the session's device; NF4 codes move as buffers.
        model->to(session.device);

        std::vector<TrainableParameter> trainables = trainablesOf(session, *model);
        std::vector<torch::Tensor> initial;
        auto baseValues = base->named_parameters();
        if (!config.usesLora() && model != base
            && masterTypeOf(config.precision) == torch::kFloat) {
            for (const TrainableParameter& parameter : trainables)
                initial.push_back(baseValues[parameter.name]);
        }
        // Offload moves the master and optimizer states to the host; with
        // sharded parameters (ZeRO-3, FSDP) nothing of a unit stays on the
        // GPU between uses, so optimizer+params needs nothing more.
        session.parameters =
            std::make_unique<FlatParameters>(std::move(trainables), masterTypeOf(config.precision),
                initial, shard, config.distributed.offload != config::Offload::None);
        // ZeRO-3 and FSDP shard what does not train as well: a rank holds
        // 1/N of the base between uses, as the planner counts it.
        const auto frozen = frozenTensors(*model);
        session.frozenBytes = distinctBytes(frozen);
        if (shard.parameters && shard.count > 1 && !frozen.empty())
            session.frozen = std::make_unique<FrozenShards>(
                frozen, shard, config.distributed.offload == config::Offload::OptimizerAndParams);
        finishSession(session, model);
    } catch (const std::exception& e) {
        return Error::at(config.model, "", std::string("cannot set up the model: ") + e.what());
    }
    return common::Ok{};
}

common::Status prepareShardedModel(TrainingSession& session, const LlamaConfig& llama,
    const safetensors::TensorStore& store, const std::string& initAdapter, ShardSpec shard,
    int rank)
{
    const config::RunConfig& config = session.config;
    try {
        std::shared_ptr<LlamaForCausalLm> model;
        {
            DeferredWeights deferred;
            model = createCausalLm(llama, computeDTypeOf(config.precision));
        }
        if (auto status = checkStoredWeights(*model, store); !status)
            return status;
        session.totalParameters = llama.parameterCount();
        session.dropoutGenerator =
            makeGenerator(session.device, dropoutSeed(config.training.seed, rank));
        if (config.method == config::Method::Qlora)
            session.quantizedBytes = deferQuantization(*model);
        if (config.usesLora()) {
            if (auto status = attachAdapters(session, *model, initAdapter); !status)
                return status;
        }
        WeightSlices slices(store, *model);
        std::vector<TrainableParameter> trainables = trainablesOf(session, *model);
        const std::vector<TrainableParameter> named = trainables;
        // The master of a bf16 run starts from the stored values read at
        // fp32, as exact as the one-process load.
        session.parameters =
            std::make_unique<FlatParameters>(std::move(trainables), masterTypeOf(config.precision),
                shard, config.distributed.offload != config::Offload::None, session.device,
                [&](size_t i, std::int64_t begin, const torch::Tensor& out) {
                    slices.readElements(named[i].name, named[i].tensor, begin, out);
                });
        const auto frozen = frozenTensors(*model);
        session.frozenBytes = distinctBytes(frozen);
        if (!frozen.empty())
            session.frozen = std::make_unique<FrozenShards>(frozen, shard,
                config.distributed.offload == config::Offload::OptimizerAndParams, session.device,
                [&](size_t i, std::int64_t begin, const torch::Tensor& out) {
                    slices.readBytes(frozen[i].first, frozen[i].second, begin, out);
                });
        finishSession(session, model);
    } catch (const std::exception& e) {
        return Error::at(config.model, "", std::string("cannot set up the model: ") + e.what());
    }
    return common::Ok{};
}

namespace {

// The tokenizer's ids must index the model's embedding.
common::Status checkVocabulary(
    const config::RunConfig& config, const tokenizer::Tokenizer& tokenizer, std::int64_t vocab)
{
    if (static_cast<std::int64_t>(tokenizer.vocabSize()) > vocab)
        return Error::at(config.tokenizer, "",
            "the tokenizer has " + std::to_string(tokenizer.vocabSize())
                + " tokens, more than the model's vocab_size " + std::to_string(vocab),
            "is this the model's own tokenizer?");
    return common::Ok{};
}

std::uint64_t storedBytes(const safetensors::TensorStore& store)
{
    std::uint64_t bytes = 0;
    for (const std::string& name : store.names())
        bytes += store.find(name)->byteCount();
    return bytes;
}

} // namespace

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

    // ZeRO-3 and FSDP load sharded: each rank reads only its slices of the
    // weights, after the data (docs/DISTRIBUTED.md, "Loading").
    const bool shardedLoad = shard.parameters && shard.count > 1;
    report(options, "model " + config.model);
    const common::Result<LlamaConfig> llama = loadLlamaConfig(config.model);
    if (!llama)
        return llama.error();
    if (auto status = checkVocabulary(config, *tokenizer, llama->vocabSize); !status)
        return status.error();
    common::Result<safetensors::TensorStore> store = openModelWeights(config.model, *llama);
    if (!store)
        return store.error();
    if (store->leftOutCount() > 0)
        report(options,
            "an image-text model: its language model trains as text, its vision tower and "
            "projector ("
                + std::to_string(store->leftOutCount())
                + " tensors) are left out, and the merged export is the language model alone");
    std::shared_ptr<LlamaForCausalLm> base;
    if (!shardedLoad) {
        try {
            base = createCausalLm(*llama, ComputeDType::Float32);
        } catch (const std::exception& e) {
            return Error::at(config.model, "", std::string("cannot build the model: ") + e.what());
        }
        if (auto status = loadWeights(*base, *store); !status)
            return status.error();
    }

    report(options, "data: reading and tokenizing");
    data::PrepareCallbacks callbacks;
    callbacks.progress = [&](std::string_view, std::size_t, std::size_t) {
        return !(options.stopRequested && options.stopRequested->load());
    };
    auto prepared = data::prepareData(config, *tokenizer, callbacks);
    if (!prepared)
        return prepared.error();
    session->data = std::move(prepared).value();
    // Which format the records took, and what the data's preparation warns
    // of (a chat template that fell back to a built-in format, a marker the
    // tokenizer splits), where the user reads the run's warnings.
    report(options,
        "data: records formatted with the "
            + std::string(config::toString(session->data.stats.promptTemplate)) + " template");
    for (const std::string& warning : session->data.stats.warnings)
        session->warnings.push_back("data: " + warning);
    if (session->data.train.empty())
        return Error::at(config.data.trainFiles.empty() ? config.model : config.data.trainFiles[0],
            "", "no training example left after reading and tokenizing the data");

    report(options,
        "model: setting up " + std::string(config::toString(config.method)) + " in "
            + std::string(config::toString(config.precision)));
    const common::Status model = shardedLoad
        ? prepareShardedModel(*session, *llama, *store, options.initAdapter, shard, rank)
        : prepareTrainableModel(*session, base, options.initAdapter, shard, rank);
    if (!model)
        return model.error();
    session->load.sharded = shardedLoad;
    session->load.bytesRead = store->bytesRead();
    session->load.storedBytes = storedBytes(*store);
    return session;
}

} // namespace tb::train
