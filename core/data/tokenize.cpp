#include "data/tokenize.h"

#include <algorithm>

namespace tb::data {

std::size_t TokenizedExample::trainableTokens() const
{
    return static_cast<std::size_t>(std::count_if(
        labels.begin(), labels.end(), [](std::int32_t label) { return label != kIgnoreIndex; }));
}

common::Result<TokenizedExample> tokenizeExample(
    const FormattedExample& example, const tokenizer::Tokenizer& tokenizer)
{
    const std::string full = example.text();
    TokenizedExample out;
    out.inputIds = tokenizer.encode(full, example.addSpecialTokens);
    out.labels.assign(out.inputIds.size(), kIgnoreIndex);

    // Token index where each segment starts.
    std::size_t textEnd = 0;
    std::size_t tokenStart = 0;
    for (std::size_t k = 0; k < example.segments.size(); ++k) {
        const Segment& segment = example.segments[k];
        textEnd += segment.text.size();
        std::size_t tokenEnd = out.inputIds.size();
        if (k + 1 < example.segments.size()) {
            const std::vector<tokenizer::TokenId> prefix = tokenizer.encode(
                std::string_view(full).substr(0, textEnd), example.addSpecialTokens);
            const auto mismatch = std::mismatch(
                prefix.begin(), prefix.end(), out.inputIds.begin(), out.inputIds.end());
            tokenEnd =
                std::max(tokenStart, static_cast<std::size_t>(mismatch.first - prefix.begin()));
            // A token cut by the boundary is not in the prompt: it belongs to
            // the next segment, whichever that is.
        }
        if (segment.trainable) {
            for (std::size_t i = tokenStart; i < tokenEnd; ++i)
                out.labels[i] = out.inputIds[i];
        }
        tokenStart = tokenEnd;
    }
    if (example.appendEos) {
        const std::optional<tokenizer::TokenId> eos = tokenizer.eosId();
        if (!eos)
            return common::Error{"the tokenizer has no EOS token (tokenizer_config.json eos_token)",
                "set eos_token in tokenizer_config.json"};
        const bool lastTrainable = !example.segments.empty() && example.segments.back().trainable;
        out.inputIds.push_back(*eos);
        out.labels.push_back(lastTrainable ? *eos : kIgnoreIndex);
    }
    return out;
}

} // namespace tb::data
