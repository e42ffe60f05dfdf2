#include "data/prepare_data.h"

#include "data/model_chat_template.h"

#include "data/chat_template.h"
#include "data/dataset_reader.h"
#include "data/preference_pairs.h"
#include "data/prompt_format.h"
#include "data/random.h"
#include "data/split.h"
#include "data/tokenize.h"

#include <algorithm>

namespace tb::data {

namespace {

// Tags that give the split and the pre-packing shuffle their own streams of
// the one user seed.
constexpr std::uint64_t kSplitStream = 1;
constexpr std::uint64_t kPackStream = 2;
constexpr std::size_t kProgressEvery = 256;

common::Error cancelled()
{
    return common::Error{"data preparation was cancelled", {}};
}

bool keepGoing(
    const PrepareCallbacks& callbacks, std::string_view stage, std::size_t done, std::size_t total)
{
    return !callbacks.progress || callbacks.progress(stage, done, total);
}

common::Result<std::vector<Record>> readAll(const std::vector<std::string>& files,
    const ReaderOptions& options, ReadReport& records, const PrepareCallbacks& callbacks)
{
    std::vector<Record> all;
    for (std::size_t i = 0; i < files.size(); ++i) {
        common::Result<std::vector<Record>> read = readRecords(files[i], options, records);
        if (!read.ok())
            return read.error();
        for (Record& record : read.value())
            all.push_back(std::move(record));
        if (!keepGoing(callbacks, "read", i + 1, files.size()))
            return cancelled();
    }
    return all;
}

// How records become text: the resolved format and, for Model, the
// model's own template.
struct ResolvedTemplate {
    config::PromptTemplate format = config::PromptTemplate::None;
    std::optional<ModelChatTemplate> model;
};

// data.template resolved against the tokenizer folder. Auto takes the
// model's own template; one this engine cannot parse falls back to the
// built-in format its markers name (or Alpaca for instruction records),
// with a warning that says why.
common::Result<ResolvedTemplate> resolveFormat(const config::RunConfig& config,
    const tokenizer::Tokenizer& tokenizer, std::vector<std::string>& warnings)
{
    const config::DataConfig& data = config.data;
    common::Result<std::optional<ChatTemplateText>> text = modelChatTemplateText(config.tokenizer);
    if (!text.ok())
        return text.error();
    common::Result<config::PromptTemplate> format =
        resolveTemplate(data.promptTemplate, data.format, text.value().has_value());
    if (!format.ok())
        return format.error();
    ResolvedTemplate resolved{format.value(), std::nullopt};
    if (format.value() != config::PromptTemplate::Model)
        return resolved;
    const ChatTemplateText& jinja = *text.value();
    common::Result<ModelChatTemplate> model = ModelChatTemplate::parse(
        jinja.jinja, jinja.origin, tokenizer.config().bosToken, tokenizer.config().eosToken);
    if (model.ok()) {
        resolved.model = std::move(model).value();
        return resolved;
    }
    if (data.promptTemplate == config::PromptTemplate::Model)
        return model.error();
    const std::optional<config::PromptTemplate> builtin = detectChatTemplate(jinja.jinja);
    resolved.format = builtin                     ? *builtin
        : data.format == config::DataFormat::Chat ? config::PromptTemplate::None
                                                  : config::PromptTemplate::Alpaca;
    if (!builtin && data.format == config::DataFormat::Chat)
        return model.error();
    warnings.push_back(model.error().message + "; data.template auto uses the built-in "
        + std::string(config::toString(resolved.format)) + " format instead");
    return resolved;
}

common::Result<std::vector<TokenizedExample>> tokenizeAll(const std::vector<Record>& records,
    config::PromptTemplate format, const ModelChatTemplate* model,
    const tokenizer::Tokenizer& tokenizer, config::MalformedPolicy policy, ReadReport& report,
    std::string_view stage, const PrepareCallbacks& callbacks)
{
    std::vector<TokenizedExample> examples;
    examples.reserve(records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
        if (i % kProgressEvery == 0 && i > 0 && !keepGoing(callbacks, stage, i, records.size()))
            return cancelled();
        const common::Result<FormattedExample> formatted = formatRecord(records[i], format, model);
        if (!formatted.ok()) {
            const common::Status status =
                report.malformed({records[i].source, formatted.error().message}, policy);
            if (!status.ok())
                return status.error();
            continue;
        }
        common::Result<TokenizedExample> tokens = tokenizeExample(formatted.value(), tokenizer);
        if (!tokens.ok())
            return tokens.error();
        examples.push_back(std::move(tokens).value());
    }
    if (!keepGoing(callbacks, stage, records.size(), records.size()))
        return cancelled();
    return examples;
}

std::vector<TokenizedExample> makeRows(std::vector<TokenizedExample> examples,
    const config::DataConfig& data, const tokenizer::Tokenizer& tokenizer, RowStats& stats)
{
    const std::size_t length = static_cast<std::size_t>(data.sequenceLength);
    if (data.packing)
        return packExamples(examples, length, tokenizer.eosId(), &stats);
    return truncateExamples(std::move(examples), length, &stats);
}

std::string joinFiles(const std::vector<std::string>& files)
{
    std::string text;
    for (const std::string& file : files)
        text += (text.empty() ? "" : ", ") + file;
    return text;
}

// `which` ("", "validation ") pairs all dropped.
common::Error noPairsLeft(const std::string& which, std::int64_t sequenceLength)
{
    return common::Error{"no " + which
            + "preference pairs left: every pair was malformed or its prompt alone fills "
              "data.sequence_length ("
            + std::to_string(sequenceLength) + " tokens)",
        "raise data.sequence_length"};
}

// The model's own template for conversational pairs, unless data.template
// is none (plain pairs are tokenized as written either way).
common::Result<std::optional<ModelChatTemplate>> pairTemplate(
    const config::RunConfig& config, const tokenizer::Tokenizer& tokenizer)
{
    if (config.data.promptTemplate == config::PromptTemplate::None)
        return std::optional<ModelChatTemplate>{};
    common::Result<std::optional<ChatTemplateText>> text = modelChatTemplateText(config.tokenizer);
    if (!text.ok())
        return text.error();
    if (!text.value())
        return std::optional<ModelChatTemplate>{};
    common::Result<ModelChatTemplate> model = ModelChatTemplate::parse(text.value()->jinja,
        text.value()->origin, tokenizer.config().bosToken, tokenizer.config().eosToken);
    if (!model.ok())
        return model.error();
    return std::optional<ModelChatTemplate>{std::move(model).value()};
}

// DPO's rows: a pair's chosen row then its rejected row (preference_pairs.h),
// for training and for validation alike.
common::Result<PreparedData> preparePreferenceRows(PreparedData prepared,
    const std::vector<Record>& records, const std::vector<Record>& validationRecords,
    const config::RunConfig& config, const tokenizer::Tokenizer& tokenizer)
{
    const config::DataConfig& data = config.data;
    DataStats& stats = prepared.stats;
    stats.promptTemplate = config::PromptTemplate::None;
    const auto isConversational = [](const Record& r) { return r.conversational(); };
    const bool conversational = std::any_of(records.begin(), records.end(), isConversational)
        || std::any_of(validationRecords.begin(), validationRecords.end(), isConversational);
    std::optional<ModelChatTemplate> model;
    if (conversational) {
        common::Result<std::optional<ModelChatTemplate>> loaded = pairTemplate(config, tokenizer);
        if (!loaded.ok())
            return loaded.error();
        model = std::move(loaded).value();
        if (model)
            stats.promptTemplate = config::PromptTemplate::Model;
    }
    common::Result<std::vector<PreferencePair>> pairs = tokenizePreferencePairs(
        records, tokenizer, data.malformed, stats.records, model ? &*model : nullptr);
    if (!pairs.ok())
        return pairs.error();
    const auto length = static_cast<std::size_t>(data.sequenceLength);
    prepared.train = preferenceRows(std::move(pairs).value(), length, &stats.train);
    if (prepared.train.empty())
        return noPairsLeft("", data.sequenceLength);
    if (validationRecords.empty())
        return prepared;
    common::Result<std::vector<PreferencePair>> validation = tokenizePreferencePairs(
        validationRecords, tokenizer, data.malformed, stats.records, model ? &*model : nullptr);
    if (!validation.ok())
        return validation.error();
    prepared.validation = preferenceRows(std::move(validation).value(), length, &stats.validation);
    if (prepared.validation.empty())
        return noPairsLeft("validation ", data.sequenceLength);
    return prepared;
}

} // namespace

std::int32_t padIdFor(const tokenizer::Tokenizer& tokenizer)
{
    if (const auto pad = tokenizer.padId())
        return *pad;
    if (const auto eos = tokenizer.eosId())
        return *eos;
    return 0;
}

common::Result<PreparedData> prepareData(const config::RunConfig& config,
    const tokenizer::Tokenizer& tokenizer, const PrepareCallbacks& callbacks)
{
    const config::DataConfig& data = config.data;
    const ReaderOptions options = ReaderOptions::fromConfig(data);
    PreparedData prepared;
    DataStats& stats = prepared.stats;

    common::Result<std::vector<Record>> train =
        readAll(data.trainFiles, options, stats.records, callbacks);
    if (!train.ok())
        return train.error();
    std::vector<Record> trainRecords = std::move(train).value();
    std::vector<Record> validationRecords;
    if (!data.validationFiles.empty()) {
        common::Result<std::vector<Record>> validation =
            readAll(data.validationFiles, options, stats.records, callbacks);
        if (!validation.ok())
            return validation.error();
        validationRecords = std::move(validation).value();
    } else if (data.validationSplit > 0.0) {
        const SplitIndices split = splitForValidation(trainRecords.size(), data.validationSplit,
            deriveSeed(config.training.seed, kSplitStream));
        std::vector<Record> kept;
        for (const std::size_t index : split.train)
            kept.push_back(std::move(trainRecords[index]));
        for (const std::size_t index : split.validation)
            validationRecords.push_back(std::move(trainRecords[index]));
        trainRecords = std::move(kept);
    }
    if (trainRecords.empty())
        return common::Error{"no training records in " + joinFiles(data.trainFiles) + " ("
                + std::to_string(stats.records.malformedCount()) + " malformed)",
            "check data.format and data.columns"};
    stats.trainRecords = trainRecords.size();
    stats.validationRecords = validationRecords.size();
    if (data.format == config::DataFormat::Preference)
        return preparePreferenceRows(
            std::move(prepared), trainRecords, validationRecords, config, tokenizer);

    common::Result<ResolvedTemplate> resolved = resolveFormat(config, tokenizer, stats.warnings);
    if (!resolved.ok())
        return resolved.error();
    const config::PromptTemplate format = resolved.value().format;
    const ModelChatTemplate* model = resolved.value().model ? &*resolved.value().model : nullptr;
    stats.promptTemplate = format;
    for (const std::string& marker : templateMarkers(format)) {
        if (!tokenizer.tokenToId(marker))
            stats.warnings.push_back("the tokenizer has no token '" + marker + "' of the "
                + std::string(config::toString(format))
                + " format: it is spelled out in several tokens");
    }
    if (!tokenizer.eosId())
        stats.warnings.push_back(
            "the tokenizer names no EOS token: packed examples are not separated");

    if (data.packing) {
        Xoshiro256 random(deriveSeed(config.training.seed, kPackStream));
        shuffleInPlace(trainRecords, random);
    }
    common::Result<std::vector<TokenizedExample>> trainTokens = tokenizeAll(trainRecords, format,
        model, tokenizer, data.malformed, stats.records, "tokenize train", callbacks);
    if (!trainTokens.ok())
        return trainTokens.error();
    common::Result<std::vector<TokenizedExample>> validationTokens = tokenizeAll(validationRecords,
        format, model, tokenizer, data.malformed, stats.records, "tokenize validation", callbacks);
    if (!validationTokens.ok())
        return validationTokens.error();

    prepared.train = makeRows(std::move(trainTokens).value(), data, tokenizer, stats.train);
    prepared.validation =
        makeRows(std::move(validationTokens).value(), data, tokenizer, stats.validation);
    if (prepared.train.empty())
        return common::Error{"no training rows: every example was malformed or had no response "
                             "within data.sequence_length ("
                + std::to_string(data.sequenceLength) + " tokens)",
            "raise data.sequence_length"};
    return prepared;
}

} // namespace tb::data
