#include "data/preference_pairs.h"

#include "data/model_chat_template.h"

#include "common/text.h"

#include <algorithm>

namespace tb::data {

namespace {

// TRL appends the EOS text unless the completion already ends with it.
std::string withEos(const std::string& completion, const std::string& eos)
{
    return completion.ends_with(eos) ? completion : completion + eos;
}

// Ids of the whole row, labels on the tokens after the prompt.
TokenizedExample completionRow(std::vector<std::int32_t> ids, std::size_t promptTokens)
{
    TokenizedExample row;
    row.labels.assign(ids.size(), kIgnoreIndex);
    for (std::size_t i = promptTokens; i < ids.size(); ++i)
        row.labels[i] = ids[i];
    row.inputIds = std::move(ids);
    return row;
}

// The three id lists of a conversational pair (see the header).
struct PairIds {
    std::vector<std::int32_t> prompt;
    std::vector<std::int32_t> chosen;
    std::vector<std::int32_t> rejected;
};

common::Result<PairIds> conversationalIds(
    const Record& record, const tokenizer::Tokenizer& tokenizer, const ModelChatTemplate& model)
{
    const auto withPrompt = [&](const std::vector<ChatMessage>& completion) {
        std::vector<ChatMessage> turns = record.promptMessages;
        turns.insert(turns.end(), completion.begin(), completion.end());
        return model.renderText(turns, false, record.tools);
    };
    common::Result<std::string> prompt =
        model.renderText(record.promptMessages, true, record.tools);
    if (!prompt.ok())
        return prompt.error();
    common::Result<std::string> chosen = withPrompt(record.chosenMessages);
    if (!chosen.ok())
        return chosen.error();
    common::Result<std::string> rejected = withPrompt(record.rejectedMessages);
    if (!rejected.ok())
        return rejected.error();
    return PairIds{tokenizer.encode(prompt.value(), false), tokenizer.encode(chosen.value(), false),
        tokenizer.encode(rejected.value(), false)};
}

common::Result<PairIds> plainIds(const Record& record, const tokenizer::Tokenizer& tokenizer)
{
    const std::optional<std::string>& eos = tokenizer.config().eosToken;
    if (!eos || !tokenizer.eosId())
        return common::Error{"the tokenizer names no EOS token (tokenizer_config.json eos_token): "
                             "a completion's end cannot be marked",
            "set eos_token in tokenizer_config.json"};
    return PairIds{tokenizer.encode(record.prompt, true),
        tokenizer.encode(record.prompt + withEos(record.chosen, *eos), true),
        tokenizer.encode(record.prompt + withEos(record.rejected, *eos), true)};
}

} // namespace

common::Result<PreferencePair> tokenizePreferencePair(
    const Record& record, const tokenizer::Tokenizer& tokenizer, const ModelChatTemplate* model)
{
    if (record.conversational() && !model)
        return common::Error{"a conversational pair needs the model's chat template: the "
                             "tokenizer folder has none, or data.template is none",
            "use plain pairs (strings), or a model whose tokenizer_config.json has a "
            "chat_template"};
    common::Result<PairIds> ids = record.conversational()
        ? conversationalIds(record, tokenizer, *model)
        : plainIds(record, tokenizer);
    if (!ids.ok())
        return ids.error();
    auto& [prompt, chosen, rejected] = ids.value();
    PreferencePair pair;
    pair.promptTokens = std::min(
        common::commonPrefixLength(prompt, chosen), common::commonPrefixLength(prompt, rejected));
    if (pair.promptTokens == chosen.size() || pair.promptTokens == rejected.size())
        return common::Error{"a completion has no token after the prompt's", {}};
    pair.chosen = completionRow(std::move(chosen), pair.promptTokens);
    pair.rejected = completionRow(std::move(rejected), pair.promptTokens);
    return pair;
}

std::vector<TokenizedExample> preferenceRows(
    std::vector<PreferencePair> pairs, std::size_t sequenceLength, RowStats* stats)
{
    RowStats local;
    RowStats& counted = stats ? *stats : local;
    std::vector<TokenizedExample> rows;
    rows.reserve(2 * pairs.size());
    for (PreferencePair& pair : pairs) {
        counted.examples += 2;
        if (pair.promptTokens >= sequenceLength) {
            counted.droppedExamples += 2;
            continue;
        }
        for (TokenizedExample* row : {&pair.chosen, &pair.rejected}) {
            if (row->size() > sequenceLength) {
                row->inputIds.resize(sequenceLength);
                row->labels.resize(sequenceLength);
                ++counted.truncatedExamples;
            }
            ++counted.rows;
            counted.tokens += row->size();
            counted.trainableTokens += row->trainableTokens();
            rows.push_back(std::move(*row));
        }
    }
    return rows;
}

common::Result<std::vector<PreferencePair>> tokenizePreferencePairs(
    const std::vector<Record>& records, const tokenizer::Tokenizer& tokenizer,
    config::MalformedPolicy policy, ReadReport& report, const ModelChatTemplate* model)
{
    std::vector<PreferencePair> pairs;
    pairs.reserve(records.size());
    for (const Record& record : records) {
        common::Result<PreferencePair> pair = tokenizePreferencePair(record, tokenizer, model);
        if (pair.ok()) {
            pairs.push_back(std::move(pair).value());
            continue;
        }
        // The tokenizer's or the template's problem, not the record's.
        if ((!record.conversational() && !tokenizer.eosId()) || (record.conversational() && !model))
            return pair.error();
        if (common::Status status = report.malformed({record.source, pair.error().message}, policy);
            !status.ok())
            return status.error();
    }
    return pairs;
}

} // namespace tb::data
