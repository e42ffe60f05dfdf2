#include "data/split.h"

#include "data/random.h"

#include <algorithm>
#include <cmath>

namespace tb::data {

SplitIndices splitForValidation(std::size_t count, double fraction, std::uint64_t seed)
{
    SplitIndices split;
    std::size_t held = 0;
    if (fraction > 0.0 && count >= 2) {
        held = static_cast<std::size_t>(std::llround(static_cast<double>(count) * fraction));
        held = std::clamp<std::size_t>(held, 1, count - 1);
    }
    const std::vector<std::size_t> order = permutation(count, seed);
    split.validation.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(held));
    split.train.assign(order.begin() + static_cast<std::ptrdiff_t>(held), order.end());
    std::sort(split.validation.begin(), split.validation.end());
    std::sort(split.train.begin(), split.train.end());
    return split;
}

} // namespace tb::data
