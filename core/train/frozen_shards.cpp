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

std::vector<std::vector<size_t>> FrozenShards::layOut(
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors, ShardSpec shard)
{
    TORCH_CHECK(shard.count >= 1 && shard.rank >= 0 && shard.rank < shard.count, "shard rank ",
        shard.rank, " of ", shard.count);
    // A tensor registered under two names (tied weights) is placed once.
    std::map<int, std::vector<size_t>> members;
    std::set<const void*> seen;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (seen.insert(tensors[i].second.unsafeGetTensorImpl()).second)
            members[unitOfParameter(tensors[i].first)].push_back(i);
    }
    std::vector<std::vector<size_t>> indicesOf;
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
        m_units.push_back(std::move(unit));
        indicesOf.push_back(indices);
    }
    return indicesOf;
}

torch::TensorOptions FrozenShards::shardOptions(const torch::Device& device) const
{
    return m_shardOnHost ? torch::TensorOptions()
                               .dtype(torch::kByte)
                               .device(torch::kCPU)
                               .pinned_memory(device.is_cuda())
                         : torch::TensorOptions().dtype(torch::kByte).device(device);
}

namespace {

// The model's tensor now reads from its place in the unit's buffer.
void pointInto(torch::Tensor tensor, const torch::Tensor& whole, const FrozenShards::Entry& entry)
{
    tensor.set_data(
        whole.narrow(0, entry.offset, entry.bytes).view(tensor.scalar_type()).view(tensor.sizes()));
}

} // namespace

FrozenShards::FrozenShards(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    ShardSpec shard, bool shardOnHost)
    : m_shardOnHost(shardOnHost)
{
    fillUnits(tensors, shard, [&](Unit& unit, const std::vector<size_t>& indices) {
        const torch::Device device = tensors[indices.front()].second.device();
        unit.whole = torch::zeros({unit.paddedBytes}, torch::dtype(torch::kByte).device(device));
        for (size_t k = 0; k < indices.size(); ++k) {
            const torch::Tensor& tensor = tensors[indices[k]].second;
            const Entry& entry = unit.entries[k];
            unit.whole.narrow(0, entry.offset, entry.bytes).copy_(bytesOf(tensor));
            pointInto(tensor, unit.whole, entry);
        }
        const torch::Tensor own =
            unit.whole.narrow(0, unit.shardBytes * shard.rank, unit.shardBytes);
        unit.shard = own.to(shardOptions(device), /*non_blocking=*/false, /*copy=*/true);
        releaseStorage(unit.whole);
    });
}

FrozenShards::FrozenShards(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    ShardSpec shard, bool shardOnHost, const torch::Device& device, const ByteReader& read)
    : m_shardOnHost(shardOnHost)
{
    fillUnits(tensors, shard, [&](Unit& unit, const std::vector<size_t>& indices) {
        unit.whole =
            tensorWithoutStorage({unit.paddedBytes}, torch::dtype(torch::kByte).device(device));
        unit.shard = torch::zeros({unit.shardBytes}, shardOptions(device));
        const std::int64_t begin = unit.shardBytes * shard.rank;
        const std::int64_t end = begin + unit.shardBytes;
        // Every entry is read before any is repointed: reading one NF4
        // buffer quantises its projection into all of them.
        for (size_t k = 0; k < indices.size(); ++k) {
            const Entry& entry = unit.entries[k];
            const std::int64_t from = std::max(entry.offset, begin);
            const std::int64_t to = std::min(entry.offset + entry.bytes, end);
            if (from < to)
                read(
                    indices[k], from - entry.offset, unit.shard.narrow(0, from - begin, to - from));
        }
        // Views are taken over storage (LibTorch checks their bounds), which
        // is freed again before any of it is touched.
        allocateStorage(unit.whole);
        for (size_t k = 0; k < indices.size(); ++k)
            pointInto(tensors[indices[k]].second, unit.whole, unit.entries[k]);
        releaseStorage(unit.whole);
    });
}

void FrozenShards::fillUnits(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    ShardSpec shard, const std::function<void(Unit&, const std::vector<size_t>&)>& fill)
{
    const std::vector<std::vector<size_t>> indicesOf = layOut(tensors, shard);
    torch::NoGradGuard noGrad;
    for (size_t u = 0; u < m_units.size(); ++u)
        fill(m_units[u], indicesOf[u]);
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
