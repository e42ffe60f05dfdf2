#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The training choices the planner and the run configuration share, with
// their spellings: one table each, read by the plan's CLI, YAML and GUI
// parsers and by the run config reader, written by both writers.
namespace tb::common {

enum class Method { Full, Lora, Qlora };

enum class Precision {
    Fp32, // fp32 weights, gradients and optimizer
    Fp16Mixed, // 16-bit working weights and gradients, fp32 master + states, loss scaling
    Bf16Mixed, // the same with bf16 (no loss scaling)
    Bf16, // pure bf16: weights, gradients and optimizer states in bf16, no master copy
};

// Data-parallel strategies (docs/DISTRIBUTED.md).
enum class Sharding {
    Ddp, // replicated (with one GPU: plain training); "none" parses to this
    Zero1, // DeepSpeed ZeRO stage 1: optimizer states partitioned
    Zero2, // + gradients partitioned
    Zero3, // + parameters partitioned
    FsdpFull, // PyTorch FSDP FULL_SHARD
    FsdpGradOp, // SHARD_GRAD_OP
    FsdpHybrid, // HYBRID_SHARD: FULL_SHARD inside a node, replicated across nodes
};

// What the run optimises: Sft, the next-token loss; Dpo, DPO on preference
// pairs (train/dpo_step.h; planned as docs/PLANNER.md 4.15 says).
enum class Objective { Sft, Dpo };

enum class Offload {
    None,
    Optimizer, // optimizer states (and the fp32 master) in CPU memory, step on CPU
    OptimizerAndParams, // parameters too (ZeRO-3 / FSDP only)
};

template <typename Enum> struct Spelling {
    Enum value;
    std::string_view name;
};

// The first spelling of each value is canonical (written, listed in
// messages); the others are aliases a reader accepts: the planner's
// "zero-3", FSDP's own "full_shard", accelerate's "no" for fp32.
inline constexpr std::array kMethodSpellings = std::to_array<Spelling<Method>>({
    {Method::Full, "full"},
    {Method::Lora, "lora"},
    {Method::Qlora, "qlora"},
    {Method::Full, "full-finetune"},
});
inline constexpr std::array kPrecisionSpellings = std::to_array<Spelling<Precision>>({
    {Precision::Fp32, "fp32"},
    {Precision::Fp16Mixed, "fp16-mixed"},
    {Precision::Bf16Mixed, "bf16-mixed"},
    {Precision::Bf16, "bf16"},
    {Precision::Fp16Mixed, "fp16"},
    {Precision::Fp16Mixed, "fp16_mixed"},
    {Precision::Bf16Mixed, "bf16_mixed"},
    {Precision::Bf16, "pure-bf16"},
    {Precision::Fp32, "no"},
});
inline constexpr std::array kShardingSpellings = std::to_array<Spelling<Sharding>>({
    {Sharding::Ddp, "ddp"},
    {Sharding::Zero1, "zero1"},
    {Sharding::Zero2, "zero2"},
    {Sharding::Zero3, "zero3"},
    {Sharding::FsdpFull, "fsdp-full"},
    {Sharding::FsdpGradOp, "fsdp-grad-op"},
    {Sharding::FsdpHybrid, "fsdp-hybrid"},
    {Sharding::Ddp, "none"},
    {Sharding::Zero1, "zero-1"},
    {Sharding::Zero2, "zero-2"},
    {Sharding::Zero3, "zero-3"},
    {Sharding::FsdpFull, "fsdp"},
    {Sharding::FsdpFull, "full_shard"},
    {Sharding::FsdpGradOp, "shard_grad_op"},
    {Sharding::FsdpHybrid, "hybrid_shard"},
});
inline constexpr std::array kOffloadSpellings = std::to_array<Spelling<Offload>>({
    {Offload::None, "none"},
    {Offload::Optimizer, "optimizer"},
    {Offload::OptimizerAndParams, "optimizer+params"},
    {Offload::OptimizerAndParams, "params"},
    {Offload::OptimizerAndParams, "all"},
});
inline constexpr std::array kObjectiveSpellings = std::to_array<Spelling<Objective>>({
    {Objective::Sft, "sft"},
    {Objective::Dpo, "dpo"},
});

// The canonical spelling of `value`.
template <typename Enum, size_t N>
constexpr std::string_view spellingOf(const std::array<Spelling<Enum>, N>& table, Enum value)
{
    for (const Spelling<Enum>& entry : table) {
        if (entry.value == value)
            return entry.name;
    }
    return "?";
}

// The value spelled exactly `text` (canonical or alias), or nullopt.
template <typename Enum, size_t N>
constexpr std::optional<Enum> parseSpelling(
    const std::array<Spelling<Enum>, N>& table, std::string_view text)
{
    for (const Spelling<Enum>& entry : table) {
        if (entry.name == text)
            return entry.value;
    }
    return std::nullopt;
}

// The canonical spellings in table order.
template <typename Enum, size_t N>
std::vector<std::string> canonicalSpellings(const std::array<Spelling<Enum>, N>& table)
{
    std::vector<std::string> names;
    for (size_t i = 0; i < N; ++i) {
        if (spellingOf(table, table[i].value) == table[i].name)
            names.emplace_back(table[i].name);
    }
    return names;
}

// The table of each enum, for code generic over enums.
template <typename Enum> struct SpellingTable;
template <> struct SpellingTable<Method> {
    static constexpr const auto& table = kMethodSpellings;
};
template <> struct SpellingTable<Precision> {
    static constexpr const auto& table = kPrecisionSpellings;
};
template <> struct SpellingTable<Sharding> {
    static constexpr const auto& table = kShardingSpellings;
};
template <> struct SpellingTable<Offload> {
    static constexpr const auto& table = kOffloadSpellings;
};
template <> struct SpellingTable<Objective> {
    static constexpr const auto& table = kObjectiveSpellings;
};

inline std::string_view toString(Method value)
{
    return spellingOf(kMethodSpellings, value);
}
inline std::string_view toString(Precision value)
{
    return spellingOf(kPrecisionSpellings, value);
}
inline std::string_view toString(Sharding value)
{
    return spellingOf(kShardingSpellings, value);
}
inline std::string_view toString(Offload value)
{
    return spellingOf(kOffloadSpellings, value);
}
inline std::string_view toString(Objective value)
{
    return spellingOf(kObjectiveSpellings, value);
}

} // namespace tb::common
