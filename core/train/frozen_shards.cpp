#include "train/frozen_shards.h"

#include "train/tensor_storage.h"

#include <map>
#include <set>

namespace tb::train {

namespace {

// Every entry starts at a multiple of this many bytes, so a view of any
// element type (up to 16-byte complex) can be taken at its offset.
constexpr std::int64_t kAlignment = 16;

std::int64_t roundUp(std::int64_t value, std::int64_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

// The tensor's elements as bytes, in row-major order.
torch::Tensor bytesOf(const torch::Tensor& tensor)
{
    return tensor.contiguous().reshape({-1}).view(torch::kByte);
}

} // namespace

FrozenShards::FrozenShards(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    ShardSpec shard, bool shardOnHost)
    : m_shardOnHost(shardOnHost)
{
    TORCH_CHECK(shard.count >= 1 && shard.rank >= 0 && shard.rank < shard.count, "shard rank ",
        shard.rank, " of ", shard.count);
    // Units in id order, tensors in model order inside each; a tensor
    // registered under two names (tied weights) is placed once.
    std::map<int, std::vector<size_t>> members;
    std::set<const void*> seen;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (seen.insert(tensors[i].second.unsafeGetTensorImpl()).second)
            members[unitOfParameter(tensors[i].first)].push_back(i);
    }
    torch::NoGradGuard noGrad;
    for (const auto& [id, indices] : members) {
        Unit unit;
        unit.id = id;
        std::int64_t end = 0;
        for (const size_t i : indices) {
            const torch::Tensor& tensor = tensors[i].second;
            const std::int64_t offset = roundUp(end, kAlignment);
            const auto bytes = static_cast<std::int64_t>(tensor.numel() * tensor.element_size());
            unit.entries.push_back({tensors[i].first, offset, bytes});
            end = offset + bytes;
        }
        unit.paddedBytes = roundUp(std::max<std::int64_t>(end, 1), shard.count);
        unit.shardBytes = unit.paddedBytes / shard.count;
        const torch::Device device = tensors[indices.front()].second.device();
        unit.whole = torch::zeros({unit.paddedBytes}, torch::dtype(torch::kByte).device(device));
        for (size_t k = 0; k < indices.size(); ++k) {
            torch::Tensor tensor = tensors[indices[k]].second;
            const Entry& entry = unit.entries[k];
            torch::Tensor place = unit.whole.narrow(0, entry.offset, entry.bytes);
            place.copy_(bytesOf(tensor));
            // The model's tensor now reads from the unit's buffer.
            tensor.set_data(place.view(tensor.scalar_type()).view(tensor.sizes()));
        }
        const torch::Tensor own = unit.whole.narrow(0, unit.shardBytes * shard.rank, unit.shardBytes);
        unit.shard = shardOnHost
            ? own.to(torch::TensorOptions().device(torch::kCPU).pinned_memory(device.is_cuda()),
                  /*non_blocking=*/false, /*copy=*/true)
            : own.clone();
        releaseStorage(unit.whole);
        m_units.push_back(std::move(unit));
    }
    m_peak = residentBytes();
}

std::optional<size_t> FrozenShards::unitWithId(int id) const
{
    for (size_t u = 0; u < m_units.size(); ++u) {
        if (m_units[u].id == id)
            return u;
    }
    return std::nullopt;
}

torch::Tensor FrozenShards::shardOnDevice(const Unit& unit) const
{
    if (unit.shard.device() == unit.whole.device() && !m_shardOnHost)
        return unit.shard;
    return unit.shard.to(unit.whole.device(), /*non_blocking=*/true, /*copy=*/true);
}

bool FrozenShards::gathered(size_t unit) const
{
    return holdsStorage(m_units[unit].whole);
}

void FrozenShards::allocate(Unit& unit)
{
    if (holdsStorage(unit.whole))
        return;
    allocateStorage(unit.whole);
    m_peak = std::max(m_peak, residentBytes());
}

void FrozenShards::release(Unit& unit)
{
    releaseStorage(unit.whole);
}

std::int64_t FrozenShards::shardBytes() const
{
    std::int64_t bytes = 0;
    for (const Unit& unit : m_units)
        bytes += unit.shardBytes;
    return bytes;
}

std::int64_t FrozenShards::residentBytes() const
{
    std::int64_t bytes = m_shardOnHost ? 0 : shardBytes();
    for (const Unit& unit : m_units) {
        if (holdsStorage(unit.whole))
            bytes += unit.paddedBytes;
    }
    return bytes;
}

std::int64_t FrozenShards::peakResidentBytes() const
{
    return std::max(m_peak, residentBytes());
}

void FrozenShards::resetPeakResidentBytes()
{
    m_peak = residentBytes();
}

} // namespace tb::train
