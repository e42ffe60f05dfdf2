#include "plan/plan_options.h"

#include "common/text.h"
#include "common/training_limits.h"

#include <charconv>
#include <cmath>
#include <type_traits>

namespace tb::plan {

namespace {

using common::kGradAccumLimit;
using common::kLoraAlphaLimit;
using common::kLoraDropoutLimit;
using common::kLoraRankLimit;
using common::kMicroBatchLimit;
using common::kSequenceLengthLimit;

#define TB_FIELD(member) [](PlanInput& in) -> OptionField { return &in.member; }

constexpr double kMaxSamples = double(std::int64_t(1) << 50);
constexpr double kMaxTokens = double(std::int64_t(1) << 55);
constexpr double kMaxBucket = 1e15;

// Order: the order of the CLI's help and of a written plan file.
const PlanOption kOptions[] = {
    {"model", "model", "preset name, HF repo id, or a config.json (or its folder)", "", 0, 0, 0,
        TB_FIELD(model)},
    {"method", "method", "training method", "", 0, 0, 0, TB_FIELD(method)},
    {"double_quant", "double-quant",
        "QLoRA: the NF4 blocks' fp32 absmax quantised again to 8 bits, 0.127 instead of 0.5 "
        "bits a weight (bitsandbytes' bnb_4bit_use_double_quant; transformers' "
        "BitsAndBytesConfig leaves it off)",
        "", 0, 0, 0, TB_FIELD(doubleQuant)},
    {"objective", "objective",
        "what the run optimises: sft (next-token loss) or dpo (preference pairs: micro_batch "
        "pairs of two rows, a reference forward without gradient; lora or qlora, pairs never "
        "packed)",
        "", 0, 0, 0, TB_FIELD(objective)},
    {"mxfp4_experts", "mxfp4-experts",
        "experts published in MXFP4 (gpt-oss): stored (4-bit e2m1 and an e8m0 scale per 32, "
        "4.25 bits a weight, frozen: LoRA on the other projections only) or upcast (to the "
        "compute dtype on load, trainable)",
        "", 0, 0, 0, TB_FIELD(mxfp4Experts)},
    {"lora.rank", "lora-rank", "LoRA rank", "", double(kLoraRankLimit.min),
        double(kLoraRankLimit.max), 0, TB_FIELD(lora.rank)},
    {"lora.alpha", "lora-alpha", "LoRA alpha (scales the update; does not change memory)", "",
        kLoraAlphaLimit.min, kLoraAlphaLimit.max, 2, TB_FIELD(lora.alpha)},
    {"lora.dropout", "lora-dropout", "LoRA dropout (above 0, the dropped inputs are stored)", "",
        kLoraDropoutLimit.min, kLoraDropoutLimit.max, 2, TB_FIELD(lora.dropout)},
    {"lora.target_modules", "lora-targets",
        "comma-separated module names; empty: every linear layer of the blocks", "", 0, 0, 0,
        TB_FIELD(lora.targetModules)},
    {"lora.target_parameters", "lora-target-parameters",
        "comma-separated expert weights of a mixture of experts (peft's target_parameters: "
        "mlp.experts.gate_up_proj, mlp.experts.down_proj); empty: none",
        "", 0, 0, 0, TB_FIELD(lora.targetParameters)},
    {"precision", "precision", "numeric precision", "", 0, 0, 0, TB_FIELD(precision)},
    {"optimizer", "optimizer", "optimizer", "", 0, 0, 0, TB_FIELD(optimizer)},
    {"optimizer_kernel", "optimizer-kernel",
        "how AdamW runs: foreach (torch.optim.AdamW's default; the step allocates one "
        "variance-sized temporary per parameter), fused (in place), auto (fused for Tunebench's "
        "trainer and DeepSpeed, the Hugging Face Trainer's default optim otherwise)",
        "", 0, 0, 0, TB_FIELD(optimizerKernel)},
    {"sharding", "sharding", "data-parallel strategy (\"none\" is ddp)", "", 0, 0, 0,
        TB_FIELD(sharding)},
    {"offload", "offload", "CPU offload (which strategies allow which: docs/DISTRIBUTED.md)", "", 0,
        0, 0, TB_FIELD(offload)},
    {"gradient_checkpointing", "grad-ckpt", "activation checkpointing on every layer", "", 0, 0, 0,
        TB_FIELD(gradientCheckpointing)},
    {"attention", "attention", "attention kernel", "", 0, 0, 0, TB_FIELD(attention)},
    {"loss", "loss",
        "how the loss treats logits (auto: full-fp32 for hf-trainer, which transformers "
        "computes, else chunked)",
        "", 0, 0, 0, TB_FIELD(loss)},
    {"loss_chunks", "loss-chunks", "chunks of the chunked or fused loss", "", 1, 4096, 0,
        TB_FIELD(lossChunks)},
    {"engine", "engine",
        "whose implementation the memory model follows: reference (DeepSpeed's ZeRO, PyTorch's "
        "FSDP), tunebench (Tunebench's trainer) or hf-trainer (the Hugging Face Trainer or TRL "
        "with peft: one GPU, DDP or accelerate's FSDP)",
        "", 0, 0, 0, TB_FIELD(engine)},
    {"ddp_bucket_view", "ddp-bucket-view",
        "DDP's gradient_as_bucket_view (off: the buckets are a second copy of the gradients)", "",
        0, 0, 0, TB_FIELD(ddpBucketView)},
    {"micro_batch", "micro-batch",
        "sequences per GPU per forward (objective dpo: preference pairs, two rows each)", "",
        double(kMicroBatchLimit.min), double(kMicroBatchLimit.max), 0, TB_FIELD(microBatch)},
    {"seq_len", "seq-len", "tokens per sequence", "tokens", double(kSequenceLengthLimit.min),
        double(kSequenceLengthLimit.max), 0, TB_FIELD(seqLen)},
    {"grad_accum", "grad-accum", "micro-batches per optimizer step", "",
        double(kGradAccumLimit.min), double(kGradAccumLimit.max), 0, TB_FIELD(gradAccum)},
    {"eval_batch", "eval-batch",
        "sequences per GPU per evaluation forward, the Hugging Face Trainer's "
        "per_device_eval_batch_size (engine hf-trainer; 0: no evaluation planned)",
        "", 0, double(kMicroBatchLimit.max), 0, TB_FIELD(evalBatch)},
    {"packing", "packing", "samples packed into full sequences (off: one padded sample a row)", "",
        0, 0, 0, TB_FIELD(packing)},
    {"vm_size", "vm", "an Azure VM size, e.g. Standard_ND96amsr_A100_v4 (sets the GPU)", "", 0, 0,
        0, TB_FIELD(vmSize)},
    {"gpu", "gpu", "a GPU from presets/hardware/gpus.yaml (plans without a VM: no price)", "", 0, 0,
        0, TB_FIELD(gpu)},
    {"gpus_per_node", "gpus-per-node", "GPUs used per node; 0: all of the VM's", "", 0, 1024, 0,
        TB_FIELD(gpusPerNode)},
    {"nodes", "nodes", "nodes", "", 1, 4096, 0, TB_FIELD(nodes)},
    {"dataset.samples", "dataset-samples", "samples in the dataset", "", 0, kMaxSamples, 0,
        TB_FIELD(datasetSamples)},
    {"dataset.mean_tokens_per_sample", "mean-tokens", "mean tokens per sample", "tokens", 0, 1e9, 0,
        TB_FIELD(meanTokensPerSample)},
    {"dataset.tokens", "dataset-tokens",
        "tokens in the dataset; 0: samples x mean tokens per sample", "tokens", 0, kMaxTokens, 0,
        TB_FIELD(datasetTokens)},
    {"dataset.epochs", "epochs", "passes over the dataset", "", 0.001, 1e6, 3, TB_FIELD(epochs)},
    {"deepspeed.reduce_bucket_size", "", "DeepSpeed reduce_bucket_size", "elements", 0, kMaxBucket,
        0, TB_FIELD(deepspeed.reduceBucketSize)},
    {"deepspeed.allgather_bucket_size", "", "DeepSpeed allgather_bucket_size (ZeRO-1/2)",
        "elements", 0, kMaxBucket, 0, TB_FIELD(deepspeed.allgatherBucketSize)},
    {"deepspeed.overlap_comm", "", "DeepSpeed overlap_comm; auto: DeepSpeed's default per stage",
        "", 0, 0, 0, TB_FIELD(deepspeed.overlapComm)},
    {"deepspeed.contiguous_gradients", "", "DeepSpeed contiguous_gradients", "", 0, 0, 0,
        TB_FIELD(deepspeed.contiguousGradients)},
    {"deepspeed.stage3_prefetch_bucket_size", "", "DeepSpeed stage3_prefetch_bucket_size",
        "elements", 0, kMaxBucket, 0, TB_FIELD(deepspeed.prefetchBucketSize)},
    {"deepspeed.stage3_max_live_parameters", "", "DeepSpeed stage3_max_live_parameters", "elements",
        0, kMaxBucket, 0, TB_FIELD(deepspeed.maxLiveParameters)},
    {"deepspeed.pin_memory", "", "DeepSpeed offload pin_memory", "", 0, 0, 0,
        TB_FIELD(deepspeed.pinMemory)},
    {"deepspeed.buffer_count", "", "DeepSpeed offload_param.buffer_count", "", 1, 1024, 0,
        TB_FIELD(deepspeed.paramBufferCount)},
    {"deepspeed.buffer_size", "", "DeepSpeed offload_param.buffer_size", "elements", 0, kMaxBucket,
        0, TB_FIELD(deepspeed.paramBufferSize)},
    {"fsdp.backward_prefetch", "", "FSDP backward_prefetch", "", 0, 0, 0,
        TB_FIELD(fsdp.backwardPrefetch)},
    {"fsdp.forward_prefetch", "", "FSDP forward_prefetch", "", 0, 0, 0,
        TB_FIELD(fsdp.forwardPrefetch)},
    {"fsdp.limit_all_gathers", "", "FSDP limit_all_gathers", "", 0, 0, 0,
        TB_FIELD(fsdp.limitAllGathers)},
    {"fsdp.no_sync", "",
        "FSDP accumulates gradients under no_sync: unsharded on every GPU until the step", "", 0, 0,
        0, TB_FIELD(fsdp.noSync)},
    {"fsdp.adapters_in_layer_units", "",
        "LoRA adapters share their layer's FSDP unit (use_orig_params): its gradient covers the "
        "frozen weights",
        "", 0, 0, 0, TB_FIELD(fsdp.adaptersInLayerUnits)},
    {"calibration.utilisation", "utilisation",
        "achievable fraction of dense peak; 0: the GPU preset's", "", 0, 1, 3,
        TB_FIELD(utilisationOverride)},
    {"calibration.cuda_context_gib", "",
        "CUDA context and library workspaces per GPU; 0: the "
        "GPU preset's",
        "GiB", 0, 64, 2, TB_FIELD(cudaContextGiB)},
    {"calibration.allocator_overhead", "",
        "reserved beyond allocated, as a fraction of transients; 0: the GPU preset's", "", 0, 1, 3,
        TB_FIELD(allocatorOverhead)},
};

#undef TB_FIELD

constexpr std::string_view kPrefetchNames[] = {"pre", "post", "none"};

std::vector<std::string> prefetchNames()
{
    return {std::begin(kPrefetchNames), std::end(kPrefetchNames)};
}

std::optional<BackwardPrefetch> parsePrefetch(std::string_view text)
{
    const std::string lower = common::toLower(common::trimView(text));
    for (int i = 0; i < 3; ++i)
        if (lower == kPrefetchNames[i])
            return BackwardPrefetch(i);
    return std::nullopt;
}

// Each choice type's spellings (canonical first) and parser, found by the
// type of the field.
// Enum is a type, which takes no parentheses.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define TB_CHOICE(Enum, names, parse)                                                              \
    std::vector<std::string> namesOf(Enum*)                                                        \
    {                                                                                              \
        return names();                                                                            \
    }                                                                                              \
    std::optional<Enum> parseAs(Enum*, std::string_view text)                                      \
    {                                                                                              \
        return parse(text);                                                                        \
    }
// NOLINTEND(bugprone-macro-parentheses)
TB_CHOICE(Method, methodNames, parseMethod)
TB_CHOICE(Precision, precisionNames, parsePrecision)
TB_CHOICE(Optimizer, optimizerNames, parseOptimizer)
TB_CHOICE(OptimizerKernel, optimizerKernelNames, parseOptimizerKernel)
TB_CHOICE(Sharding, shardingNames, parseSharding)
TB_CHOICE(Offload, offloadNames, parseOffload)
TB_CHOICE(Attention, attentionNames, parseAttention)
TB_CHOICE(LossMode, lossModeNames, parseLossMode)
TB_CHOICE(Engine, engineNames, parseEngine)
TB_CHOICE(BackwardPrefetch, prefetchNames, parsePrefetch)
TB_CHOICE(Objective, objectiveNames, parseObjective)
TB_CHOICE(Mxfp4Experts, mxfp4ExpertsNames, parseMxfp4Experts)
#undef TB_CHOICE

std::string_view spell(BackwardPrefetch value)
{
    return kPrefetchNames[int(value)];
}
template <typename Enum> std::string_view spell(Enum value)
{
    return toString(value);
}

std::optional<bool> parseBoolean(std::string_view text)
{
    const std::string lower = common::toLower(common::trimView(text));
    if (lower == "true" || lower == "yes" || lower == "on" || lower == "1")
        return true;
    if (lower == "false" || lower == "no" || lower == "off" || lower == "0")
        return false;
    return std::nullopt;
}

// Integers as written ("65536"); the range check comes after.
std::optional<long long> parseInteger(std::string_view text)
{
    const std::string_view trimmed = common::trimView(text);
    long long value = 0;
    const auto [end, error] =
        std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), value);
    if (error != std::errc() || end != trimmed.data() + trimmed.size() || trimmed.empty())
        return std::nullopt;
    return value;
}

std::optional<double> parseReal(std::string_view text)
{
    const std::string trimmed(common::trimView(text));
    if (trimmed.empty())
        return std::nullopt;
    char* end = nullptr;
    const double value = std::strtod(trimmed.c_str(), &end);
    if (end != trimmed.c_str() + trimmed.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

// Compared as integers: past 2^53 a double cannot tell max from max + 1.
bool inIntegerRange(const PlanOption& option, long long value)
{
    return value >= std::llround(option.min) && value <= std::llround(option.max);
}

std::string got(std::string_view text, const PlanOption& option)
{
    return "got " + std::string(text) + ", expected " + expectedText(option);
}

} // namespace

std::span<const PlanOption> planOptions()
{
    return kOptions;
}

const PlanOption* findPlanOption(std::string_view key)
{
    for (const PlanOption& option : kOptions)
        if (option.key == key)
            return &option;
    return nullptr;
}

OptionKind kindOf(const PlanOption& option)
{
    PlanInput probe;
    return std::visit(
        [](auto* field) {
            using T = std::remove_pointer_t<decltype(field)>;
            if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::int64_t>)
                return OptionKind::Integer;
            else if constexpr (std::is_same_v<T, double>)
                return OptionKind::Real;
            else if constexpr (std::is_same_v<T, bool>)
                return OptionKind::Boolean;
            else if constexpr (std::is_same_v<T, std::string>)
                return OptionKind::Text;
            else if constexpr (std::is_same_v<T, std::vector<std::string>>)
                return OptionKind::TextList;
            else
                return OptionKind::Choice; // the enums and the optional boolean
        },
        option.field(probe));
}

std::string_view sectionOf(const PlanOption& option)
{
    const size_t dot = option.key.find('.');
    return dot == std::string_view::npos ? std::string_view() : option.key.substr(0, dot);
}

std::string_view nameInSection(const PlanOption& option)
{
    const size_t dot = option.key.find('.');
    return dot == std::string_view::npos ? option.key : option.key.substr(dot + 1);
}

std::vector<std::string> choiceNames(const PlanOption& option)
{
    PlanInput probe;
    return std::visit(
        [](auto* field) -> std::vector<std::string> {
            using T = std::remove_pointer_t<decltype(field)>;
            if constexpr (std::is_same_v<T, std::optional<bool>>)
                return {"auto", "true", "false"};
            else if constexpr (std::is_enum_v<T>)
                return namesOf(field);
            else
                return {};
        },
        option.field(probe));
}

std::string expectedText(const PlanOption& option)
{
    switch (kindOf(option)) {
    case OptionKind::Integer:
        return "an integer from " + std::to_string(std::llround(option.min)) + " to "
            + std::to_string(std::llround(option.max));
    case OptionKind::Real:
        return "a number from " + common::shortestNumber(option.min) + " to "
            + common::shortestNumber(option.max);
    case OptionKind::Boolean:
        return "true or false";
    case OptionKind::Choice:
        return common::listNames(choiceNames(option));
    case OptionKind::Text:
        return "a name";
    case OptionKind::TextList:
        return "a list of names";
    }
    return {};
}

std::string valueText(const PlanOption& option, const PlanInput& input)
{
    PlanInput copy = input;
    return std::visit(
        [](auto* field) -> std::string {
            using T = std::remove_pointer_t<decltype(field)>;
            if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::int64_t>)
                return std::to_string(*field);
            else if constexpr (std::is_same_v<T, double>)
                return common::shortestNumber(*field);
            else if constexpr (std::is_same_v<T, bool>)
                return *field ? "true" : "false";
            else if constexpr (std::is_same_v<T, std::optional<bool>>)
                return !*field ? "auto" : (**field ? "true" : "false");
            else if constexpr (std::is_same_v<T, std::string>)
                return *field;
            else if constexpr (std::is_same_v<T, std::vector<std::string>>)
                return common::join(*field, ",");
            else
                return std::string(spell(*field));
        },
        option.field(copy));
}

std::optional<std::string> assignText(
    const PlanOption& option, PlanInput& input, std::string_view text)
{
    const OptionField field = option.field(input);
    return std::visit(
        [&](auto* target) -> std::optional<std::string> {
            using T = std::remove_pointer_t<decltype(target)>;
            if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::int64_t>) {
                const std::optional<long long> value = parseInteger(text);
                if (!value || !inIntegerRange(option, *value))
                    return got(text, option);
                *target = static_cast<T>(*value);
            } else if constexpr (std::is_same_v<T, double>) {
                const std::optional<double> value = parseReal(text);
                if (!value || *value < option.min || *value > option.max)
                    return got(text, option);
                *target = *value;
            } else if constexpr (std::is_same_v<T, bool>) {
                const std::optional<bool> value = parseBoolean(text);
                if (!value)
                    return got(text, option);
                *target = *value;
            } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
                const std::optional<bool> value = parseBoolean(text);
                if (!value && common::toLower(common::trimView(text)) != "auto")
                    return got(text, option);
                *target = value;
            } else if constexpr (std::is_same_v<T, std::string>) {
                *target = common::trim(text);
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                target->clear();
                for (const std::string& name : common::split(std::string(text), ','))
                    if (!common::trim(name).empty())
                        target->push_back(common::trim(name));
            } else {
                const auto value = parseAs(target, text);
                if (!value) {
                    const std::string hint = common::didYouMean(choiceNames(option), text);
                    return got(text, option) + (hint.empty() ? "" : " (" + hint + ")");
                }
                *target = *value;
            }
            return std::nullopt;
        },
        field);
}

std::optional<std::string> checkValue(const PlanOption& option, const PlanInput& input)
{
    PlanInput copy = input;
    return std::visit(
        [&](auto* field) -> std::optional<std::string> {
            using T = std::remove_pointer_t<decltype(field)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                if (!inIntegerRange(option, *field))
                    return got(valueText(option, input), option);
            } else if constexpr (std::is_floating_point_v<T>) {
                if (!std::isfinite(*field) || *field < option.min || *field > option.max)
                    return got(valueText(option, input), option);
            }
            return std::nullopt; // an enum or a boolean holds nothing out of range
        },
        option.field(copy));
}

std::string optionTableMarkdown()
{
    const PlanInput defaults;
    std::string text = "| plan file key | CLI flag | accepts | default | meaning |\n"
                       "|---|---|---|---|---|\n";
    for (const PlanOption& option : kOptions) {
        const std::string flag = option.flag.empty() ? std::string()
            : kindOf(option) == OptionKind::Boolean
            ? "`--" + std::string(option.flag) + "`, `--no-" + std::string(option.flag) + "`"
            : "`--" + std::string(option.flag) + "`";
        const std::string fallback = valueText(option, defaults);
        text += "| `" + std::string(option.key) + "` | " + flag + " | " + expectedText(option)
            + (option.unit.empty() ? "" : " (" + std::string(option.unit) + ")") + " | "
            + (fallback.empty() ? "" : "`" + fallback + "`") + " | " + std::string(option.help)
            + " |\n";
    }
    return text;
}

} // namespace tb::plan
