#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tb::data {

struct SplitIndices {
    std::vector<std::size_t> train; // ascending
    std::vector<std::size_t> validation; // ascending
};

// Holds out round(count * fraction) of 0..count-1, chosen by a seeded
// permutation, for validation: at least one when fraction > 0 and count >= 2,
// and never all of them. The same (count, fraction, seed) always gives the
// same split.
SplitIndices splitForValidation(std::size_t count, double fraction, std::uint64_t seed);

} // namespace tb::data
