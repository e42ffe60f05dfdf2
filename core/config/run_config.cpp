#include "config/run_config.h"

#include <array>

namespace tb::config {

namespace {

// Spellings of the config's own enums; the shared ones come from
// common/training_terms.h.
template <typename Enum> struct Names : common::SpellingTable<Enum> {
};
template <> struct Names<DataFormat> {
    static constexpr std::array<common::Spelling<DataFormat>, 5> table{
        {{DataFormat::Alpaca, "alpaca"}, {DataFormat::Chat, "chat"}, {DataFormat::Csv, "csv"},
            {DataFormat::Text, "text"}, {DataFormat::Preference, "preference"}}};
};
template <> struct Names<DpoLossType> {
    static constexpr std::array<common::Spelling<DpoLossType>, 3> table{
        {{DpoLossType::Sigmoid, "sigmoid"}, {DpoLossType::Ipo, "ipo"},
            {DpoLossType::Robust, "robust"}}};
};
template <> struct Names<PromptTemplate> {
    static constexpr std::array<common::Spelling<PromptTemplate>, 7> table{
        {{PromptTemplate::Auto, "auto"}, {PromptTemplate::Model, "model"},
            {PromptTemplate::Alpaca, "alpaca"}, {PromptTemplate::Llama3, "llama3"},
            {PromptTemplate::ChatMl, "chatml"}, {PromptTemplate::Mistral, "mistral"},
            {PromptTemplate::None, "none"}}};
};
template <> struct Names<MalformedPolicy> {
    static constexpr std::array<common::Spelling<MalformedPolicy>, 2> table{
        {{MalformedPolicy::Skip, "skip"}, {MalformedPolicy::Fail, "fail"}}};
};
template <> struct Names<Schedule> {
    static constexpr std::array<common::Spelling<Schedule>, 3> table{{{Schedule::Cosine, "cosine"},
        {Schedule::Linear, "linear"}, {Schedule::Constant, "constant"}}};
};
template <> struct Names<Device> {
    static constexpr std::array<common::Spelling<Device>, 3> table{
        {{Device::Cpu, "cpu"}, {Device::Cuda, "cuda"}, {Device::Auto, "auto"}}};
};
template <> struct Names<ExportKind> {
    static constexpr std::array<common::Spelling<ExportKind>, 3> table{
        {{ExportKind::Adapter, "adapter"}, {ExportKind::Merged, "merged"},
            {ExportKind::Both, "both"}}};
};

} // namespace

template <typename Enum> std::optional<Enum> fromString(std::string_view text)
{
    return common::parseSpelling(Names<Enum>::table, text);
}

template <typename Enum> std::vector<std::string> allNames()
{
    return common::canonicalSpellings(Names<Enum>::table);
}

#define TB_CONFIG_NAMES(Enum)                                                                      \
    template std::optional<Enum> fromString<Enum>(std::string_view);                               \
    template std::vector<std::string> allNames<Enum>();
#define TB_CONFIG_ENUM(Enum)                                                                       \
    std::string_view toString(Enum value)                                                          \
    {                                                                                              \
        return common::spellingOf(Names<Enum>::table, value);                                      \
    }                                                                                              \
    TB_CONFIG_NAMES(Enum)

TB_CONFIG_NAMES(Method)
TB_CONFIG_ENUM(DataFormat)
TB_CONFIG_ENUM(PromptTemplate)
TB_CONFIG_ENUM(MalformedPolicy)
TB_CONFIG_ENUM(Schedule)
TB_CONFIG_NAMES(Precision)
TB_CONFIG_ENUM(Device)
TB_CONFIG_ENUM(ExportKind)
TB_CONFIG_NAMES(Objective)
TB_CONFIG_ENUM(DpoLossType)
TB_CONFIG_NAMES(Sharding)
TB_CONFIG_NAMES(Offload)

#undef TB_CONFIG_ENUM
#undef TB_CONFIG_NAMES

const std::vector<std::string>& llamaLinearModules()
{
    static const std::vector<std::string> modules{
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    return modules;
}

const std::vector<std::string>& knownLinearModules()
{
    static const std::vector<std::string> modules{"q_proj", "k_proj", "v_proj", "o_proj",
        "gate_proj", "up_proj", "down_proj", "qkv_proj", "gate_up_proj"};
    return modules;
}

} // namespace tb::config
