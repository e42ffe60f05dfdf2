#include "config/run_config.h"

#include <array>
#include <utility>

namespace tb::config {

namespace {

template <typename Enum> struct Names;

template <> struct Names<Method> {
    static constexpr std::array<std::pair<Method, std::string_view>, 3> table{
        {{Method::Full, "full"}, {Method::Lora, "lora"}, {Method::Qlora, "qlora"}}};
};
template <> struct Names<DataFormat> {
    static constexpr std::array<std::pair<DataFormat, std::string_view>, 4> table{
        {{DataFormat::Alpaca, "alpaca"}, {DataFormat::Chat, "chat"}, {DataFormat::Csv, "csv"},
            {DataFormat::Text, "text"}}};
};
template <> struct Names<PromptTemplate> {
    static constexpr std::array<std::pair<PromptTemplate, std::string_view>, 6> table{
        {{PromptTemplate::Auto, "auto"}, {PromptTemplate::Alpaca, "alpaca"},
            {PromptTemplate::Llama3, "llama3"}, {PromptTemplate::ChatMl, "chatml"},
            {PromptTemplate::Mistral, "mistral"}, {PromptTemplate::None, "none"}}};
};
template <> struct Names<MalformedPolicy> {
    static constexpr std::array<std::pair<MalformedPolicy, std::string_view>, 2> table{
        {{MalformedPolicy::Skip, "skip"}, {MalformedPolicy::Fail, "fail"}}};
};
template <> struct Names<Schedule> {
    static constexpr std::array<std::pair<Schedule, std::string_view>, 3> table{
        {{Schedule::Cosine, "cosine"}, {Schedule::Linear, "linear"},
            {Schedule::Constant, "constant"}}};
};
template <> struct Names<Precision> {
    static constexpr std::array<std::pair<Precision, std::string_view>, 3> table{
        {{Precision::Fp32, "fp32"}, {Precision::Bf16Mixed, "bf16-mixed"},
            {Precision::Bf16, "bf16"}}};
};
template <> struct Names<Device> {
    static constexpr std::array<std::pair<Device, std::string_view>, 3> table{
        {{Device::Cpu, "cpu"}, {Device::Cuda, "cuda"}, {Device::Auto, "auto"}}};
};
template <> struct Names<ExportKind> {
    static constexpr std::array<std::pair<ExportKind, std::string_view>, 3> table{
        {{ExportKind::Adapter, "adapter"}, {ExportKind::Merged, "merged"},
            {ExportKind::Both, "both"}}};
};

template <> struct Names<Sharding> {
    static constexpr std::array<std::pair<Sharding, std::string_view>, 7> table{
        {{Sharding::Ddp, "ddp"}, {Sharding::Zero1, "zero1"}, {Sharding::Zero2, "zero2"},
            {Sharding::Zero3, "zero3"}, {Sharding::FsdpFull, "fsdp-full"},
            {Sharding::FsdpGradOp, "fsdp-grad-op"}, {Sharding::FsdpHybrid, "fsdp-hybrid"}}};
};
template <> struct Names<Offload> {
    static constexpr std::array<std::pair<Offload, std::string_view>, 3> table{
        {{Offload::None, "none"}, {Offload::Optimizer, "optimizer"},
            {Offload::OptimizerAndParams, "optimizer+params"}}};
};

template <typename Enum> std::string_view nameOf(Enum value)
{
    for (const auto& [entry, name] : Names<Enum>::table) {
        if (entry == value)
            return name;
    }
    return "?";
}

} // namespace

template <typename Enum> std::optional<Enum> fromString(std::string_view text)
{
    for (const auto& [entry, name] : Names<Enum>::table) {
        if (name == text)
            return entry;
    }
    return std::nullopt;
}

template <typename Enum> std::vector<std::string> allNames()
{
    std::vector<std::string> names;
    for (const auto& entry : Names<Enum>::table)
        names.emplace_back(entry.second);
    return names;
}

#define TB_CONFIG_ENUM(Enum)                                                                       \
    std::string_view toString(Enum value)                                                          \
    {                                                                                              \
        return nameOf(value);                                                                      \
    }                                                                                              \
    template std::optional<Enum> fromString<Enum>(std::string_view);                               \
    template std::vector<std::string> allNames<Enum>();

TB_CONFIG_ENUM(Method)
TB_CONFIG_ENUM(DataFormat)
TB_CONFIG_ENUM(PromptTemplate)
TB_CONFIG_ENUM(MalformedPolicy)
TB_CONFIG_ENUM(Schedule)
TB_CONFIG_ENUM(Precision)
TB_CONFIG_ENUM(Device)
TB_CONFIG_ENUM(ExportKind)
TB_CONFIG_ENUM(Sharding)
TB_CONFIG_ENUM(Offload)

#undef TB_CONFIG_ENUM

const std::vector<std::string>& llamaLinearModules()
{
    static const std::vector<std::string> modules{
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    return modules;
}

} // namespace tb::config
