#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tb::data {

struct SamplerOptions {
    std::size_t datasetSize = 0;
    int worldSize = 1;
    int rank = 0;
    bool shuffle = true;
    std::uint64_t seed = 0;
    // Drop the tail that does not divide evenly instead of repeating samples.
    bool dropLast = false;
};

// Where a rank is in its stream of samples: the epoch and the index of the
// next sample in that epoch's list (what a checkpoint saves).
struct DataPosition {
    std::uint64_t epoch = 0;
    std::size_t index = 0;

    bool operator==(const DataPosition&) const = default;
};

// Splits the samples of an epoch across data-parallel ranks the way
// torch.utils.data.DistributedSampler does: a permutation seeded by
// seed + epoch (ours, from Xoshiro256, not torch's randperm), extended by
// repeating its head until its length divides by the world size (or cut
// with dropLast), then rank r takes elements r, r + world, r + 2 world, ...
// Every sample is seen once per epoch across all ranks, plus the few
// repeats of the padding; every rank gets the same count.
class DistributedSampler {
public:
    explicit DistributedSampler(SamplerOptions options);

    std::size_t samplesPerRank() const { return m_samplesPerRank; }
    std::size_t totalSize() const
    {
        return m_samplesPerRank * static_cast<std::size_t>(m_options.worldSize);
    }
    const SamplerOptions& options() const { return m_options; }

    // This rank's sample indices for `epoch`, in order.
    std::vector<std::size_t> indices(std::uint64_t epoch) const;

private:
    SamplerOptions m_options;
    std::size_t m_samplesPerRank = 0;
};

// The stream of training.seed the trainer shuffles its rows with.
inline constexpr std::uint64_t kShuffleStream = 101;

// A training run's sampler for one rank: every row, shuffled each epoch by
// training.seed's shuffle stream (what the trainer batches, and what the
// planner's profile of a run's data replays).
SamplerOptions trainingSampler(
    std::size_t rows, int worldSize, int rank, std::uint64_t trainingSeed);

} // namespace tb::data
