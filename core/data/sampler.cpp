#include "data/sampler.h"

#include "data/random.h"

#include <algorithm>
#include <numeric>

namespace tb::data {

SamplerOptions trainingSampler(
    std::size_t rows, int worldSize, int rank, std::uint64_t trainingSeed)
{
    SamplerOptions options;
    options.datasetSize = rows;
    options.worldSize = worldSize;
    options.rank = rank;
    options.shuffle = true;
    options.seed = deriveSeed(trainingSeed, kShuffleStream);
    return options;
}

DistributedSampler::DistributedSampler(SamplerOptions options)
    : m_options(options)
{
    m_options.worldSize = std::max(1, m_options.worldSize);
    m_options.rank = std::clamp(m_options.rank, 0, m_options.worldSize - 1);
    const std::size_t world = static_cast<std::size_t>(m_options.worldSize);
    m_samplesPerRank = m_options.dropLast ? m_options.datasetSize / world
                                          : (m_options.datasetSize + world - 1) / world;
}

std::vector<std::size_t> DistributedSampler::indices(std::uint64_t epoch) const
{
    const std::size_t size = m_options.datasetSize;
    std::vector<std::size_t> order;
    if (m_options.shuffle) {
        order = permutation(size, m_options.seed + epoch);
    } else {
        order.resize(size);
        std::iota(order.begin(), order.end(), std::size_t{0});
    }
    const std::size_t total = totalSize();
    if (order.size() > total) {
        order.resize(total);
    } else if (!order.empty()) {
        // Repeat from the start, as many times as needed (torch does the
        // same when the padding exceeds the dataset).
        for (std::size_t i = 0; order.size() < total; ++i) {
            const std::size_t repeated = order[i];
            order.push_back(repeated);
        }
    }
    std::vector<std::size_t> mine;
    mine.reserve(m_samplesPerRank);
    for (std::size_t i = static_cast<std::size_t>(m_options.rank); i < order.size();
         i += static_cast<std::size_t>(m_options.worldSize))
        mine.push_back(order[i]);
    return mine;
}

} // namespace tb::data
