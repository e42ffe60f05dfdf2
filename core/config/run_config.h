#pragma once

#include "common/training_limits.h"
#include "common/training_terms.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::config {

// The typed run configuration: what `tunebench-cli train run.yaml` reads.
// Every field has the documented default of docs/RUN_CONFIG.md; after
// loading, every "depends on" default is resolved, so the trainer never sees
// an unset value, and paths are absolute.

// Method, precision, sharding and offload are the planner's, spelled as
// common/training_terms.h has them; the trainer runs every precision but
// fp16-mixed (the loader refuses it).
using common::Method, common::Objective, common::Offload, common::Precision, common::Sharding,
    common::toString;
// Preference: JSON Lines (or an array) of {prompt, chosen, rejected} strings,
// TRL's plain preference format; only with objective dpo.
enum class DataFormat { Alpaca, Chat, Csv, Text, Preference };
// How records become text: the model's own chat template (its Jinja, as
// transformers' apply_chat_template renders it), a built-in chat format, the
// Alpaca prompt, or none. Auto picks the model's own template when the
// tokenizer folder has one, else Alpaca for instruction records.
enum class PromptTemplate { Auto, Alpaca, Llama3, ChatMl, Mistral, None, Model };
enum class MalformedPolicy { Skip, Fail };
enum class Schedule { Cosine, Linear, Constant };
// Auto: CUDA when LibTorch sees a GPU, else the CPU (resolved by the trainer).
enum class Device { Cpu, Cuda, Auto };
enum class ExportKind { Adapter, Merged, Both };
// DPO's loss on the pair's log-ratio difference: sigmoid (Rafailov et al.
// 2023, with label smoothing: conservative DPO), ipo (Azar et al. 2023), or
// robust (Chowdhury et al. 2024), as TRL's DPOTrainer names them.
enum class DpoLossType { Sigmoid, Ipo, Robust };

// YAML spellings ("bf16-mixed", "qlora"...), used by the reader, the writer
// and error messages, so the three never disagree.
std::string_view toString(DataFormat value);
std::string_view toString(PromptTemplate value);
std::string_view toString(MalformedPolicy value);
std::string_view toString(Schedule value);
std::string_view toString(Device value);
std::string_view toString(ExportKind value);
std::string_view toString(DpoLossType value);

// The value spelled `text` (exact, lower case; an alias too), or nullopt;
// allNames() lists the canonical spellings in declaration order, for
// "expected one of" messages.
template <typename Enum> std::optional<Enum> fromString(std::string_view text);
template <typename Enum> std::vector<std::string> allNames();

// Every linear layer of a Llama decoder block, PEFT's module names.
const std::vector<std::string>& llamaLinearModules();
// Every module name a LoRA target may give: Llama's, and the fused matrices
// of Phi-3 (qkv_proj, gate_up_proj).
const std::vector<std::string>& knownLinearModules();

struct LoraConfig {
    int rank = common::kLoraRankDefault;
    double alpha = common::kLoraAlphaDefault;
    double dropout = common::kLoraDropoutDefault;
    std::vector<std::string> targetModules = llamaLinearModules();
    // The experts' fused weights of a mixture of experts, by peft's
    // target_parameters names (mlp.experts.gate_up_proj, mlp.experts.down_proj).
    std::vector<std::string> targetParameters;

    bool operator==(const LoraConfig&) const = default;
};

// Which field of a JSON object or CSV header holds each part of a record.
struct ColumnMap {
    std::string prompt = "instruction";
    std::string input = "input";
    std::string response = "output";
    std::string system = "system";
    std::string messages = "messages";

    bool operator==(const ColumnMap&) const = default;
};

struct DataConfig {
    std::vector<std::string> trainFiles;
    DataFormat format = DataFormat::Alpaca;
    ColumnMap columns;
    // When not empty, the instruction of every instruction record (e.g.
    // "Summarize the dialogue." for SAMSum-style data); columns.prompt is
    // then not read.
    std::string instruction;
    PromptTemplate promptTemplate = PromptTemplate::Auto;
    int sequenceLength = 512; // within common::kSequenceLengthLimit
    bool packing = false; // default: true for text, false otherwise
    double validationSplit = 0.0;
    std::vector<std::string> validationFiles;
    MalformedPolicy malformed = MalformedPolicy::Skip;
    // Plain text: documents are separated by this string.
    std::string textSeparator = "\n\n";

    bool operator==(const DataConfig&) const = default;
};

struct TrainingConfig {
    int epochs = 1;
    long long maxSteps = 0; // > 0: stop after this many optimizer steps, epochs unused
    int microBatch = 1;
    int gradAccum = 1;
    double learningRate = 2e-4; // default: 2e-5 for full, 2e-4 for (q)lora
    Schedule schedule = Schedule::Cosine;
    long long warmupSteps = 0;
    double warmupRatio = 0.0; // at most one of warmupSteps / warmupRatio is non-zero
    double weightDecay = 0.0;
    double adamBeta1 = 0.9;
    double adamBeta2 = 0.999;
    double adamEpsilon = 1e-8;
    double maxGradNorm = 1.0; // 0: no clipping
    std::uint64_t seed = 42;
    long long evalEvery = 0; // 0: evaluate only at the end (when there is validation data)
    long long logEvery = 1;

    bool operator==(const TrainingConfig&) const = default;
};

struct OutputConfig {
    std::string dir;
    long long checkpointEvery = 0; // 0: only at the end and on SIGINT/SIGTERM
    int keepLast = 2;
    ExportKind exportKind = ExportKind::Adapter; // default: merged for full, adapter otherwise

    bool operator==(const OutputConfig&) const = default;
};

// DPO's settings, TRL's DPOConfig defaults (beta 0.1, sigmoid, no smoothing).
struct DpoConfig {
    double beta = common::kDpoBetaDefault;
    DpoLossType lossType = DpoLossType::Sigmoid;
    // The probability that a pair's preference is flipped: sigmoid (cDPO)
    // and robust read it, in [0, 0.5); ipo has none.
    double labelSmoothing = 0.0;

    bool operator==(const DpoConfig&) const = default;
};

// How ranks share the work when the run is started with WORLD_SIZE > 1 (by
// `tunebench-cli launch`, torchrun, Azure ML or Slurm); unused by one process.
struct DistributedConfig {
    Sharding sharding = Sharding::Ddp;
    Offload offload = Offload::None; // optimizer+params only with zero3 / fsdp-*
    // The rendezvous, and any collective, that waits longer fails naming the
    // ranks it waited for.
    double timeoutSeconds = 300.0;

    bool operator==(const DistributedConfig&) const = default;
};

struct RunConfig {
    std::string name;
    std::string model; // Hugging Face model folder
    std::string tokenizer; // default: the model folder
    Method method = Method::Lora;
    Objective objective = Objective::Sft;
    LoraConfig lora;
    DpoConfig dpo; // read when objective is dpo
    DataConfig data;
    TrainingConfig training;
    Precision precision = Precision::Fp32;
    bool activationCheckpointing = false;
    Device device = Device::Cpu;
    OutputConfig output;
    DistributedConfig distributed;

    bool usesLora() const { return method != Method::Full; }
    bool isPreferenceTuning() const { return objective == Objective::Dpo; }
    bool hasValidationData() const
    {
        return data.validationSplit > 0.0 || !data.validationFiles.empty();
    }
    bool operator==(const RunConfig&) const = default;
};

} // namespace tb::config
