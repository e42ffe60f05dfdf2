#include "dist/collective_support.h"

#include <stdexcept>

namespace tb::dist {
namespace {

// (n - 1) / n of `bytes`: what each rank sends in a ring all-gather or
// reduce-scatter over the full buffer.
std::int64_t ringShare(std::int64_t bytes, int groupSize)
{
    return bytes * (groupSize - 1) / groupSize;
}

std::string describeShape(const torch::Tensor& tensor)
{
    std::string text = std::to_string(tensor.numel()) + " elements of ";
    text += c10::toString(tensor.scalar_type());
    return text;
}

} // namespace

void StatsCounter::allReduce(const torch::Tensor& tensor, int groupSize)
{
    std::lock_guard lock(m_mutex);
    m_stats.allReduceBytes += 2 * ringShare(byteSize(tensor), groupSize);
    ++m_stats.collectives;
}

void StatsCounter::allGather(const torch::Tensor& output, int groupSize)
{
    std::lock_guard lock(m_mutex);
    m_stats.allGatherBytes += ringShare(byteSize(output), groupSize);
    ++m_stats.collectives;
}

void StatsCounter::reduceScatter(const torch::Tensor& input, int groupSize)
{
    std::lock_guard lock(m_mutex);
    m_stats.reduceScatterBytes += ringShare(byteSize(input), groupSize);
    ++m_stats.collectives;
}

void StatsCounter::broadcast(const torch::Tensor& tensor)
{
    std::lock_guard lock(m_mutex);
    m_stats.broadcastBytes += byteSize(tensor);
    ++m_stats.collectives;
}

void StatsCounter::barrier()
{
    std::lock_guard lock(m_mutex);
    ++m_stats.collectives;
}

CommunicationStats StatsCounter::snapshot() const
{
    std::lock_guard lock(m_mutex);
    return m_stats;
}

std::int64_t byteSize(const torch::Tensor& tensor)
{
    return tensor.numel() * static_cast<std::int64_t>(tensor.element_size());
}

void checkContiguous(const char* operation, const torch::Tensor& tensor)
{
    if (!tensor.defined() || !tensor.is_contiguous())
        throw std::invalid_argument(
            std::string(operation) + ": expected a defined, contiguous tensor");
}

void checkAllGatherArguments(const torch::Tensor& output, const torch::Tensor& input, int groupSize)
{
    checkContiguous("all-gather output", output);
    checkContiguous("all-gather input", input);
    if (output.scalar_type() != input.scalar_type() || output.numel() != input.numel() * groupSize)
        throw std::invalid_argument("all-gather: output has " + describeShape(output)
            + ", expected " + std::to_string(groupSize) + " x input (" + describeShape(input)
            + ")");
}

void checkReduceScatterArguments(
    const torch::Tensor& output, const torch::Tensor& input, int groupSize)
{
    checkContiguous("reduce-scatter output", output);
    checkContiguous("reduce-scatter input", input);
    if (output.scalar_type() != input.scalar_type() || input.numel() % groupSize != 0
        || output.numel() * groupSize != input.numel())
        throw std::invalid_argument("reduce-scatter: input has " + describeShape(input)
            + " and output " + describeShape(output)
            + ", expected input = " + std::to_string(groupSize) + " x output, same dtype");
}

void copySlicesWithoutVersionBump(
    const torch::Tensor& output, const std::vector<torch::Tensor>& pieces)
{
    // Version counters are bumped by the ADInplaceOrView kernel; dispatching
    // below it runs the plain CPU/CUDA copy only.
    at::AutoDispatchBelowADInplaceOrView belowAutograd;
    const torch::Tensor flat = output.detach().view(-1);
    const auto count = static_cast<std::int64_t>(pieces.size());
    const std::int64_t slice = flat.numel() / count;
    for (std::int64_t index = 0; index < count; ++index) {
        const torch::Tensor& piece = pieces[static_cast<std::size_t>(index)];
        flat.narrow(0, index * slice, slice).copy_(piece.view(-1));
    }
}

} // namespace tb::dist
