#include "data/random.h"

#include <numeric>

namespace tb::data {

namespace {

constexpr std::uint64_t rotateLeft(std::uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

} // namespace

std::uint64_t SplitMix64::next()
{
    std::uint64_t z = (m_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

Xoshiro256::Xoshiro256(std::uint64_t seed)
{
    SplitMix64 seeder(seed);
    for (std::uint64_t& word : m_state)
        word = seeder.next();
}

std::uint64_t Xoshiro256::next()
{
    const std::uint64_t result = rotateLeft(m_state[1] * 5, 7) * 9;
    const std::uint64_t t = m_state[1] << 17;
    m_state[2] ^= m_state[0];
    m_state[3] ^= m_state[1];
    m_state[1] ^= m_state[2];
    m_state[0] ^= m_state[3];
    m_state[2] ^= t;
    m_state[3] = rotateLeft(m_state[3], 45);
    return result;
}

std::uint64_t Xoshiro256::below(std::uint64_t bound)
{
    // 2^64 mod bound, computed in 64 bits.
    const std::uint64_t threshold = (0 - bound) % bound;
    while (true) {
        const std::uint64_t value = next();
        if (value >= threshold)
            return value % bound;
    }
}

std::vector<std::size_t> permutation(std::size_t count, std::uint64_t seed)
{
    std::vector<std::size_t> order(count);
    std::iota(order.begin(), order.end(), std::size_t{0});
    Xoshiro256 random(seed);
    shuffleInPlace(order, random);
    return order;
}

std::uint64_t deriveSeed(std::uint64_t seed, std::uint64_t tag)
{
    SplitMix64 mixer(seed ^ (tag * 0xd1342543de82ef95ull));
    return mixer.next();
}

} // namespace tb::data
