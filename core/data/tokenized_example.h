#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tb::data {

// Label of a token that takes no part in the loss: PyTorch's
// cross_entropy ignore_index default, which Hugging Face uses too.
inline constexpr std::int32_t kIgnoreIndex = -100;

// Token ids and their labels, aligned: labels[i] is inputIds[i] where the
// loss is taken and kIgnoreIndex elsewhere. As in Hugging Face, the shift
// (position i predicts token i + 1) happens in the loss, not here.
struct TokenizedExample {
    std::vector<std::int32_t> inputIds;
    std::vector<std::int32_t> labels;

    std::size_t size() const { return inputIds.size(); }
    std::size_t trainableTokens() const;
    bool operator==(const TokenizedExample&) const = default;
};

} // namespace tb::data
