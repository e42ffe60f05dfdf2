#include "plan/plan_input.h"
#include "plan/plan_options.h"

#include "common/text.h"
#include "common/training_rules.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace tb::plan {

namespace {

using common::Spelling;

// The first spelling of each value is canonical; the rest are aliases.
constexpr std::array kOptimizers = {Spelling<Optimizer>{Optimizer::AdamW, "adamw"},
    Spelling<Optimizer>{Optimizer::AdamW8bit, "adamw8bit"},
    Spelling<Optimizer>{Optimizer::Sgd, "sgd"},
    Spelling<Optimizer>{Optimizer::Adafactor, "adafactor"},
    Spelling<Optimizer>{Optimizer::AdamW, "adam"},
    Spelling<Optimizer>{Optimizer::AdamW, "adamw_torch"},
    Spelling<Optimizer>{Optimizer::AdamW8bit, "adamw_8bit"},
    Spelling<Optimizer>{Optimizer::AdamW8bit, "adamw-8bit"},
    Spelling<Optimizer>{Optimizer::AdamW8bit, "adamw_bnb_8bit"},
    Spelling<Optimizer>{Optimizer::Sgd, "sgd-momentum"}};
constexpr std::array kOptimizerKernels = {Spelling<OptimizerKernel>{OptimizerKernel::Auto, "auto"},
    Spelling<OptimizerKernel>{OptimizerKernel::Foreach, "foreach"},
    Spelling<OptimizerKernel>{OptimizerKernel::Fused, "fused"}};
constexpr std::array kAttentions = {Spelling<Attention>{Attention::Eager, "eager"},
    Spelling<Attention>{Attention::Sdpa, "sdpa"}, Spelling<Attention>{Attention::Sdpa, "flash"},
    Spelling<Attention>{Attention::Sdpa, "flash_attention_2"}};
constexpr std::array kLossModes = {Spelling<LossMode>{LossMode::Auto, "auto"},
    Spelling<LossMode>{LossMode::FullFp32, "full-fp32"},
    Spelling<LossMode>{LossMode::Chunked, "chunked"}, Spelling<LossMode>{LossMode::Fused, "fused"},
    Spelling<LossMode>{LossMode::FullFp32, "hf"}};
constexpr std::array kEngines = {Spelling<Engine>{Engine::Reference, "reference"},
    Spelling<Engine>{Engine::Tunebench, "tunebench"},
    Spelling<Engine>{Engine::Reference, "deepspeed"},
    Spelling<Engine>{Engine::HfTrainer, "hf-trainer"}, Spelling<Engine>{Engine::Reference, "fsdp"},
    Spelling<Engine>{Engine::HfTrainer, "transformers"},
    Spelling<Engine>{Engine::HfTrainer, "trl"}};
constexpr std::array kMxfp4Experts = {Spelling<Mxfp4Experts>{Mxfp4Experts::Stored, "stored"},
    Spelling<Mxfp4Experts>{Mxfp4Experts::Upcast, "upcast"}};

// Any case, surrounding space ignored: the CLI and GUI spellings.
template <typename Enum, size_t N>
std::optional<Enum> parseIn(const std::array<Spelling<Enum>, N>& table, std::string_view text)
{
    return common::parseSpelling(table, common::toLower(common::trimView(text)));
}

} // namespace

std::string_view toString(Optimizer value)
{
    return common::spellingOf(kOptimizers, value);
}
std::string_view toString(OptimizerKernel value)
{
    return common::spellingOf(kOptimizerKernels, value);
}
std::string_view toString(Attention value)
{
    return common::spellingOf(kAttentions, value);
}
std::string_view toString(LossMode value)
{
    return common::spellingOf(kLossModes, value);
}
std::string_view toString(Engine value)
{
    return common::spellingOf(kEngines, value);
}

std::string_view toString(Mxfp4Experts value)
{
    return common::spellingOf(kMxfp4Experts, value);
}

std::optional<Method> parseMethod(std::string_view text)
{
    return parseIn(common::kMethodSpellings, text);
}
std::optional<Precision> parsePrecision(std::string_view text)
{
    return parseIn(common::kPrecisionSpellings, text);
}
std::optional<Optimizer> parseOptimizer(std::string_view text)
{
    return parseIn(kOptimizers, text);
}
std::optional<OptimizerKernel> parseOptimizerKernel(std::string_view text)
{
    return parseIn(kOptimizerKernels, text);
}
std::optional<Sharding> parseSharding(std::string_view text)
{
    return parseIn(common::kShardingSpellings, text);
}
std::optional<Offload> parseOffload(std::string_view text)
{
    return parseIn(common::kOffloadSpellings, text);
}
std::optional<Attention> parseAttention(std::string_view text)
{
    return parseIn(kAttentions, text);
}
std::optional<LossMode> parseLossMode(std::string_view text)
{
    return parseIn(kLossModes, text);
}
std::optional<Engine> parseEngine(std::string_view text)
{
    return parseIn(kEngines, text);
}

std::optional<Objective> parseObjective(std::string_view text)
{
    return parseIn(common::kObjectiveSpellings, text);
}

std::optional<Mxfp4Experts> parseMxfp4Experts(std::string_view text)
{
    return parseIn(kMxfp4Experts, text);
}

std::vector<std::string> methodNames()
{
    return common::canonicalSpellings(common::kMethodSpellings);
}
std::vector<std::string> precisionNames()
{
    return common::canonicalSpellings(common::kPrecisionSpellings);
}
std::vector<std::string> optimizerNames()
{
    return common::canonicalSpellings(kOptimizers);
}
std::vector<std::string> optimizerKernelNames()
{
    return common::canonicalSpellings(kOptimizerKernels);
}
std::vector<std::string> shardingNames()
{
    return common::canonicalSpellings(common::kShardingSpellings);
}
std::vector<std::string> offloadNames()
{
    return common::canonicalSpellings(common::kOffloadSpellings);
}
std::vector<std::string> attentionNames()
{
    return common::canonicalSpellings(kAttentions);
}
std::vector<std::string> lossModeNames()
{
    return common::canonicalSpellings(kLossModes);
}
std::vector<std::string> engineNames()
{
    return common::canonicalSpellings(kEngines);
}
std::vector<std::string> objectiveNames()
{
    return common::canonicalSpellings(common::kObjectiveSpellings);
}
std::vector<std::string> mxfp4ExpertsNames()
{
    return common::canonicalSpellings(kMxfp4Experts);
}

int rowsPerMicroBatch(const PlanInput& input)
{
    return std::max(1, input.microBatch) * (input.objective == Objective::Dpo ? 2 : 1);
}

std::string_view label(Sharding value)
{
    switch (value) {
    case Sharding::Ddp:
        return "DDP (replicated)";
    case Sharding::Zero1:
        return "ZeRO-1";
    case Sharding::Zero2:
        return "ZeRO-2";
    case Sharding::Zero3:
        return "ZeRO-3";
    case Sharding::FsdpFull:
        return "FSDP FULL_SHARD";
    case Sharding::FsdpGradOp:
        return "FSDP SHARD_GRAD_OP";
    case Sharding::FsdpHybrid:
        return "FSDP HYBRID_SHARD";
    }
    return "?";
}

std::string_view label(Precision value)
{
    switch (value) {
    case Precision::Fp32:
        return "fp32";
    case Precision::Fp16Mixed:
        return "fp16 mixed (fp32 master, loss scaling)";
    case Precision::Bf16Mixed:
        return "bf16 mixed (fp32 master)";
    case Precision::Bf16:
        return "pure bf16 (no master copy)";
    }
    return "?";
}

bool isZero(Sharding s)
{
    return s == Sharding::Zero1 || s == Sharding::Zero2 || s == Sharding::Zero3;
}

std::int64_t PlanInput::trainingTokens() const
{
    const double perEpoch = datasetTokens > 0
        ? double(datasetTokens)
        : double(datasetSamples) * std::max(0.0, meanTokensPerSample);
    const double total = perEpoch * std::max(0.0, epochs);
    return total >= 9.0e18 ? std::int64_t(9.0e18) : std::int64_t(std::llround(total));
}

LossMode resolvedLoss(const PlanInput& in)
{
    if (in.loss != LossMode::Auto)
        return in.loss;
    return in.engine == Engine::HfTrainer ? LossMode::FullFp32 : LossMode::Chunked;
}

namespace {

// What the Hugging Face Trainer plan does not describe, each with where to
// plan it instead.
void refuseForHfTrainer(const PlanInput& in, std::vector<std::string>& problems)
{
    if (in.sharding == Sharding::Ddp && in.offload != Offload::None)
        problems.push_back("offload: " + std::string(toString(in.offload))
            + " with engine hf-trainer and sharding ddp, expected none (the Trainer offloads "
              "through DeepSpeed or FSDP: set the sharding)");
    if (in.sharding != Sharding::Ddp && !isFsdp(in.sharding))
        problems.push_back("sharding: " + std::string(toString(in.sharding))
            + " with engine hf-trainer, expected ddp or an FSDP strategy (accelerate's FSDP "
              "plugin); the Trainer's DeepSpeed integration is planned with engine reference");
    if (in.loss == LossMode::Chunked)
        problems.push_back("loss: chunked, expected auto, full-fp32 or fused with engine "
                           "hf-trainer (transformers computes the loss on the whole batch's fp32 "
                           "logits; fused is Liger's kernel, use_liger_kernel)");
    const bool mixed = in.precision == Precision::Bf16Mixed || in.precision == Precision::Fp16Mixed;
    if (in.method == Method::Full && mixed)
        problems.push_back(std::string("precision: ") + std::string(toString(in.precision))
            + " with method full, expected bf16 or fp32 with engine hf-trainer (the Trainer's "
              "bf16=True over a model loaded in fp32 keeps autocast copies not planned; a model "
              "loaded in bf16 is planned as bf16)");
}

// FSDP's gradient settings describe how another framework drives PyTorch's
// FSDP; each is refused where it cannot mean anything.
void refuseFsdpGradientSettings(const PlanInput& in, std::vector<std::string>& problems)
{
    const auto refuse = [&](const char* key, const std::string& because) {
        problems.push_back(std::string(key) + ": true, expected false " + because);
    };
    for (const auto& [key, set] : {std::pair{"fsdp.no_sync", in.fsdp.noSync},
             std::pair{"fsdp.adapters_in_layer_units", in.fsdp.adaptersInLayerUnits}}) {
        if (!set)
            continue;
        if (!isFsdp(in.sharding))
            refuse(
                key, "with sharding " + std::string(toString(in.sharding)) + " (an FSDP setting)");
        else if (in.engine == Engine::Tunebench)
            refuse(key,
                "with engine tunebench (Tunebench's trainer reduce-scatters every "
                "micro-batch and keeps adapters apart from the frozen weights)");
    }
    if (in.fsdp.adaptersInLayerUnits && in.method == Method::Full)
        refuse("fsdp.adapters_in_layer_units", "with method full (there are no adapters)");
}

// What DPO cannot run as planned: our trainer's reference is the base with
// the adapter disabled, which a full fine-tune does not have.
void refuseForDpo(const PlanInput& in, std::vector<std::string>& problems)
{
    if (in.method == Method::Full)
        problems.push_back("method: full with objective dpo, expected lora or qlora (DPO's "
                           "reference is the base with the adapter disabled; a full fine-tune "
                           "would need a second, frozen copy of the model)");
}

} // namespace

common::Status validatePlanInput(const PlanInput& in)
{
    std::vector<std::string> problems;
    if (common::trim(in.model).empty())
        problems.push_back("model: empty, expected a preset name or a config.json path");
    for (const PlanOption& option : planOptions())
        if (const std::optional<std::string> refused = checkValue(option, in))
            problems.push_back(std::string(option.key) + ": " + *refused);
    if (in.data.measured()) {
        if (in.data.microBatches <= 0 || in.data.batchTokens < in.data.tokens
            || in.data.longestRow <= 0 || in.data.longestRow > in.seqLen)
            problems.push_back("data: a profile of " + std::to_string(in.data.rows)
                + " rows whose batches, tokens or longest row ("
                + std::to_string(in.data.longestRow)
                + " tokens) do not add up, expected rows of at most seq_len "
                + std::to_string(in.seqLen) + " tokens");
    } else if (in.datasetTokens == 0 && (in.datasetSamples == 0 || in.meanTokensPerSample <= 0))
        problems.push_back("dataset: give dataset.tokens, or dataset.samples and "
                           "dataset.mean_tokens_per_sample, both above 0");
    if (in.vmSize.empty() && in.gpu.empty())
        problems.push_back("vm_size / gpu: give an Azure VM size or a GPU");

    if (in.optimizerKernel != OptimizerKernel::Auto && in.optimizer != Optimizer::AdamW)
        problems.push_back("optimizer_kernel: " + std::string(toString(in.optimizerKernel))
            + " is AdamW's, expected auto with " + std::string(toString(in.optimizer)));
    if (in.optimizerKernel == OptimizerKernel::Foreach && in.engine == Engine::Tunebench)
        problems.push_back("optimizer_kernel: foreach, expected fused or auto with engine "
                           "tunebench (Tunebench's trainer runs the fused kernel)");
    if (in.method == Method::Qlora && !in.doubleQuant && in.engine == Engine::Tunebench)
        problems.push_back("double_quant: false, expected true with engine tunebench (Tunebench's "
                           "trainer always quantises the NF4 blocks' absmax again)");
    refuseFsdpGradientSettings(in, problems);
    if (in.objective == Objective::Dpo)
        refuseForDpo(in, problems);
    if (in.engine == Engine::HfTrainer)
        refuseForHfTrainer(in, problems);
    else if (in.evalBatch > 0)
        problems.push_back("eval_batch: " + std::to_string(in.evalBatch) + " with engine "
            + std::string(toString(in.engine))
            + ", expected 0 (the evaluation phase is planned for engine hf-trainer; Tunebench's "
              "trainer evaluates at micro_batch without grad, below its step)");
    if (const auto refused = common::checkOffload(in.sharding, in.offload))
        problems.push_back(refused->field + ": " + refused->problem + " (" + refused->hint + ")");
    if (problems.empty())
        return common::Ok{};
    std::string message = "plan: ";
    for (size_t i = 0; i < problems.size(); ++i)
        message += (i ? "; " : "") + problems[i];
    return common::Error{message, {}};
}

} // namespace tb::plan
