#include "data/preference_pairs.h"

#include <algorithm>

namespace tb::data {

namespace {

std::size_t commonPrefix(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b)
{
    const auto mismatch = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    return static_cast<std::size_t>(mismatch.first - a.begin());
}

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

} // namespace

common::Result<PreferencePair> tokenizePreferencePair(
    const Record& record, const tokenizer::Tokenizer& tokenizer)
{
    const std::optional<std::string>& eos = tokenizer.config().eosToken;
    if (!eos || !tokenizer.eosId())
        return common::Error{"the tokenizer names no EOS token (tokenizer_config.json eos_token): "
                             "a completion's end cannot be marked",
            "set eos_token in tokenizer_config.json"};
    const std::vector<std::int32_t> prompt = tokenizer.encode(record.prompt, true);
    std::vector<std::int32_t> chosen =
        tokenizer.encode(record.prompt + withEos(record.chosen, *eos), true);
    std::vector<std::int32_t> rejected =
        tokenizer.encode(record.prompt + withEos(record.rejected, *eos), true);
    PreferencePair pair;
    pair.promptTokens = std::min(commonPrefix(prompt, chosen), commonPrefix(prompt, rejected));
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
    config::MalformedPolicy policy, ReadReport& report)
{
    std::vector<PreferencePair> pairs;
    pairs.reserve(records.size());
    for (const Record& record : records) {
        common::Result<PreferencePair> pair = tokenizePreferencePair(record, tokenizer);
        if (pair.ok()) {
            pairs.push_back(std::move(pair).value());
            continue;
        }
        if (!tokenizer.eosId())
            return pair.error(); // the tokenizer's, not the record's
        if (common::Status status = report.malformed({record.source, pair.error().message}, policy);
            !status.ok())
            return status.error();
    }
    return pairs;
}

} // namespace tb::data
