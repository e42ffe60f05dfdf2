#include "data/packing.h"

namespace tb::data {

std::vector<TokenizedExample> packExamples(std::span<const TokenizedExample> examples,
    std::size_t sequenceLength, std::optional<std::int32_t> separatorId, RowStats* stats)
{
    std::vector<TokenizedExample> rows;
    if (sequenceLength == 0)
        return rows;
    TokenizedExample current;
    const auto push = [&](std::int32_t id, std::int32_t label) {
        current.inputIds.push_back(id);
        current.labels.push_back(label);
        if (current.inputIds.size() == sequenceLength) {
            rows.push_back(std::move(current));
            current = TokenizedExample{};
        }
    };
    for (const TokenizedExample& example : examples) {
        for (std::size_t i = 0; i < example.inputIds.size(); ++i)
            push(example.inputIds[i], example.labels[i]);
        if (separatorId && !example.inputIds.empty() && example.inputIds.back() != *separatorId)
            push(*separatorId, *separatorId);
    }
    if (!current.inputIds.empty())
        rows.push_back(std::move(current));
    if (stats) {
        stats->examples += examples.size();
        stats->rows += rows.size();
        for (const TokenizedExample& row : rows) {
            stats->tokens += row.size();
            stats->trainableTokens += row.trainableTokens();
        }
    }
    return rows;
}

std::vector<TokenizedExample> truncateExamples(
    std::vector<TokenizedExample> examples, std::size_t sequenceLength, RowStats* stats)
{
    std::vector<TokenizedExample> rows;
    rows.reserve(examples.size());
    RowStats local;
    for (TokenizedExample& example : examples) {
        ++local.examples;
        if (example.size() > sequenceLength) {
            ++local.truncatedExamples;
            example.inputIds.resize(sequenceLength);
            example.labels.resize(sequenceLength);
        }
        // Position 0 predicts nothing (the loss shifts by one), so a row
        // needs a trained label after its first token.
        bool trained = false;
        for (std::size_t i = 1; i < example.labels.size() && !trained; ++i)
            trained = example.labels[i] != kIgnoreIndex;
        if (!trained) {
            ++local.droppedExamples;
            continue;
        }
        local.tokens += example.size();
        local.trainableTokens += example.trainableTokens();
        rows.push_back(std::move(example));
    }
    local.rows = rows.size();
    if (stats) {
        stats->examples += local.examples;
        stats->rows += local.rows;
        stats->tokens += local.tokens;
        stats->trainableTokens += local.trainableTokens;
        stats->truncatedExamples += local.truncatedExamples;
        stats->droppedExamples += local.droppedExamples;
    }
    return rows;
}

} // namespace tb::data
