#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tb::data {

// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014; constants as in Vigna's splitmix64.c): turns a
// seed into well-mixed words, used to seed Xoshiro256.
class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed)
        : m_state(seed)
    {
    }
    std::uint64_t next();

private:
    std::uint64_t m_state;
};

// xoshiro256** 1.0 (Blackman and Vigna, "Scrambled linear pseudorandom
// number generators", ACM TOMS 2021; https://prng.di.unimi.it/). Our shuffle,
// split and sampler use it rather than std::shuffle, whose algorithm is
// implementation-defined, so the same seed gives the same order on every
// platform and standard library.
class Xoshiro256 {
public:
    explicit Xoshiro256(std::uint64_t seed);
    std::uint64_t next();
    // Uniform in [0, bound) without modulo bias: values below
    // 2^64 mod bound are rejected (as OpenBSD's arc4random_uniform). bound > 0.
    std::uint64_t below(std::uint64_t bound);

private:
    std::array<std::uint64_t, 4> m_state{};
};

// Fisher-Yates (Durstenfeld's form, Knuth TAOCP vol. 2, 3.4.2 algorithm P):
// for i = n-1 down to 1, swap item i with item below(i + 1).
template <typename T> void shuffleInPlace(std::vector<T>& items, Xoshiro256& random)
{
    for (std::size_t i = items.size(); i > 1; --i) {
        const std::size_t j = static_cast<std::size_t>(random.below(i));
        std::swap(items[i - 1], items[j]);
    }
}

// 0..count-1 shuffled by `seed`.
std::vector<std::size_t> permutation(std::size_t count, std::uint64_t seed);

// Independent seeds for independent uses of one user seed (shuffle, split):
// SplitMix64 of the seed mixed with a fixed tag.
std::uint64_t deriveSeed(std::uint64_t seed, std::uint64_t tag);

} // namespace tb::data
