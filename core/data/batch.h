#pragma once

#include "data/sampler.h"
#include "data/tokenized_example.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tb::data {

struct BatchOptions {
    std::size_t microBatch = 1;
    std::int32_t padId = 0;
    // 0: pad to the longest row of each batch; else to this length (fixed
    // shapes, e.g. to measure peak memory).
    std::size_t padToLength = 0;
    // Rows each sample is made of, stored one after the other: 2 for a
    // preference pair (its chosen row, then its rejected row). A batch of
    // such samples holds every sample's first row, then every sample's
    // second row, as TRL's DPO batches put the chosen rows before the
    // rejected ones; microBatch counts samples.
    std::size_t rowsPerSample = 1;
};

// A micro-batch as plain arrays, row-major [batchSize x sequenceLength], for
// the trainer to wrap as tensors (torch::from_blob) without copying.
// Padding is on the right: attentionMask 0 and label kIgnoreIndex there.
struct Batch {
    std::size_t batchSize = 0;
    std::size_t sequenceLength = 0;
    std::vector<std::int32_t> inputIds;
    std::vector<std::int32_t> labels;
    std::vector<std::int32_t> attentionMask;
    std::vector<std::size_t> sampleIndices; // dataset rows, in batch order
    std::size_t rowsPerSample = 1; // BatchOptions::rowsPerSample
    std::uint64_t epoch = 0;

    bool isEmpty() const { return batchSize == 0; }
    // Real (unpadded) tokens.
    std::size_t tokens() const;
    // Terms of the next-token loss: labels other than kIgnoreIndex at
    // positions 1.. of each row (position 0 has no predecessor).
    std::size_t lossTokens() const;
};

// The rows `indices` of `rows` padded into one batch; with rowsPerSample > 1
// the indices are already laid out as rowsOfSamples lays them out.
Batch collate(std::span<const TokenizedExample> rows, std::span<const std::size_t> indices,
    const BatchOptions& options);

// The rows of `samples` (sample indices) as BatchOptions::rowsPerSample lays
// them out in a batch: each sample's first row, then each one's second...
std::vector<std::size_t> rowsOfSamples(
    std::span<const std::size_t> samples, std::size_t rowsPerSample);

// Micro-batches of this rank's samples, epoch after epoch, forever. Batches
// do not cross epochs: the last one of an epoch may be smaller. The rows must
// outlive the iterator. Built at position(), it continues exactly where a
// saved run stopped.
class BatchIterator {
public:
    BatchIterator(std::span<const TokenizedExample> rows, SamplerOptions sampler,
        BatchOptions batch, DataPosition start = {});

    // The next micro-batch; empty only when the dataset (or this rank's
    // share of it) is empty.
    Batch next();
    DataPosition position() const { return m_position; }
    std::size_t batchesPerEpoch() const;
    const DistributedSampler& sampler() const { return m_sampler; }

private:
    void loadEpoch();

    std::span<const TokenizedExample> m_rows;
    DistributedSampler m_sampler;
    BatchOptions m_batch;
    DataPosition m_position;
    std::vector<std::size_t> m_epochIndices;
    std::uint64_t m_loadedEpoch = 0;
    bool m_loaded = false;
};

} // namespace tb::data
