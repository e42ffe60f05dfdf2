#include "data/batch.h"

#include <algorithm>

namespace tb::data {

std::size_t Batch::tokens() const
{
    return static_cast<std::size_t>(std::count(attentionMask.begin(), attentionMask.end(), 1));
}

std::size_t Batch::lossTokens() const
{
    std::size_t count = 0;
    for (std::size_t row = 0; row < batchSize; ++row) {
        for (std::size_t column = 1; column < sequenceLength; ++column)
            count += labels[row * sequenceLength + column] != kIgnoreIndex ? 1 : 0;
    }
    return count;
}

Batch collate(std::span<const TokenizedExample> rows, std::span<const std::size_t> indices,
    const BatchOptions& options)
{
    Batch batch;
    batch.batchSize = indices.size();
    batch.rowsPerSample = std::max<std::size_t>(1, options.rowsPerSample);
    std::size_t longest = 0;
    for (const std::size_t index : indices)
        longest = std::max(longest, rows[index].size());
    batch.sequenceLength = std::max(longest, options.padToLength);
    const std::size_t cells = batch.batchSize * batch.sequenceLength;
    batch.inputIds.assign(cells, options.padId);
    batch.labels.assign(cells, kIgnoreIndex);
    batch.attentionMask.assign(cells, 0);
    for (std::size_t row = 0; row < indices.size(); ++row) {
        const TokenizedExample& example = rows[indices[row]];
        // A row longer than padToLength keeps its length: sequenceLength
        // was raised to the longest row above.
        const std::size_t offset = row * batch.sequenceLength;
        std::copy(example.inputIds.begin(), example.inputIds.end(),
            batch.inputIds.begin() + static_cast<std::ptrdiff_t>(offset));
        std::copy(example.labels.begin(), example.labels.end(),
            batch.labels.begin() + static_cast<std::ptrdiff_t>(offset));
        std::fill_n(
            batch.attentionMask.begin() + static_cast<std::ptrdiff_t>(offset), example.size(), 1);
        batch.sampleIndices.push_back(indices[row]);
    }
    return batch;
}

std::vector<std::size_t> rowsOfSamples(
    std::span<const std::size_t> samples, std::size_t rowsPerSample)
{
    std::vector<std::size_t> rows;
    rows.reserve(samples.size() * rowsPerSample);
    for (std::size_t part = 0; part < rowsPerSample; ++part) {
        for (const std::size_t sample : samples)
            rows.push_back(sample * rowsPerSample + part);
    }
    return rows;
}

BatchIterator::BatchIterator(std::span<const TokenizedExample> rows, SamplerOptions sampler,
    BatchOptions batch, DataPosition start)
    : m_rows(rows)
    , m_sampler([&] {
        sampler.datasetSize = rows.size() / std::max<std::size_t>(1, batch.rowsPerSample);
        return sampler;
    }())
    , m_batch(batch)
    , m_position(start)
{
    m_batch.microBatch = std::max<std::size_t>(1, m_batch.microBatch);
    m_batch.rowsPerSample = std::max<std::size_t>(1, m_batch.rowsPerSample);
}

std::size_t BatchIterator::batchesPerEpoch() const
{
    return (m_sampler.samplesPerRank() + m_batch.microBatch - 1) / m_batch.microBatch;
}

void BatchIterator::loadEpoch()
{
    if (m_loaded && m_loadedEpoch == m_position.epoch)
        return;
    m_epochIndices = m_sampler.indices(m_position.epoch);
    m_loadedEpoch = m_position.epoch;
    m_loaded = true;
}

Batch BatchIterator::next()
{
    if (m_sampler.samplesPerRank() == 0)
        return Batch{};
    if (m_position.index >= m_sampler.samplesPerRank()) {
        ++m_position.epoch;
        m_position.index = 0;
    }
    loadEpoch();
    const std::size_t end = std::min(m_position.index + m_batch.microBatch, m_epochIndices.size());
    const std::span<const std::size_t> indices(
        m_epochIndices.data() + m_position.index, end - m_position.index);
    Batch batch = m_batch.rowsPerSample == 1
        ? collate(m_rows, indices, m_batch)
        : collate(m_rows, rowsOfSamples(indices, m_batch.rowsPerSample), m_batch);
    batch.epoch = m_position.epoch;
    m_position.index = end;
    if (m_position.index >= m_sampler.samplesPerRank()) {
        ++m_position.epoch;
        m_position.index = 0;
    }
    return batch;
}

} // namespace tb::data
