#pragma once

#include "train/flat_parameters.h"

#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tb::train {

// The frozen tensors of a model (a LoRA or QLoRA base: projections, norms,
// embeddings, NF4 codes and scales) split across a shard group, as ZeRO-3
// and FSDP split the trainable ones. Per unit (unitOfParameter), every
// frozen tensor of the unit lives in one byte buffer, whatever its dtype, at
// an offset aligned for any element type; each rank keeps 1/count of the
// bytes between uses, and the data-parallel engine gathers the whole unit
// for its forward and backward and releases it after, as it does the
// trainable values. The model's tensors become views into the buffer, so
// the layers read them as before; released, the buffer's storage is freed
// and the views stay (autograd's saved views included).
class FrozenShards {
public:
    struct Entry {
        std::string name;
        std::int64_t offset = 0; // bytes, within the unit
        std::int64_t bytes = 0;
    };
    struct Unit {
        int id = 0; // unitOfParameter's number
        std::vector<Entry> entries;
        std::int64_t paddedBytes = 0; // a multiple of the shard count
        std::int64_t shardBytes = 0; // paddedBytes / shard count
        torch::Tensor whole; // uint8 [paddedBytes]; storage only while gathered
        torch::Tensor shard; // uint8 [shardBytes], this rank's part
    };

    // `tensors`: every frozen tensor of the model by name, on the model's
    // device. `shard.count` ranks share them; this rank keeps part
    // `shard.rank`, in host memory with `shardOnHost` (parameter offload;
    // pinned for a GPU model). The whole units are released when this
    // returns.
    FrozenShards(const std::vector<std::pair<std::string, torch::Tensor>>& tensors, ShardSpec shard,
        bool shardOnHost = false);

    // Bytes [begin, begin + out.numel()) of tensor `index` in its own dtype,
    // written into the uint8 tensor `out`.
    using ByteReader =
        std::function<void(size_t index, std::int64_t begin, const torch::Tensor& out)>;
    // A sharded load: the tensors may have no storage; `read` fills this
    // rank's shard of each unit and nothing else is held. The units live on
    // `device`.
    FrozenShards(const std::vector<std::pair<std::string, torch::Tensor>>& tensors, ShardSpec shard,
        bool shardOnHost, const torch::Device& device, const ByteReader& read);

    std::vector<Unit>& units() { return m_units; }
    std::optional<size_t> unitWithId(int id) const;
    bool gathered(size_t unit) const;
    bool shardOnHost() const { return m_shardOnHost; }
    // The unit's shard where the collective runs (a copy when it is kept on
    // the host).
    torch::Tensor shardOnDevice(const Unit& unit) const;

    // Storage for the whole unit (what an all-gather then fills), and its
    // release.
    void allocate(Unit& unit);
    void release(Unit& unit);

    // Device bytes held now: the shards (unless on the host) plus the units
    // gathered; and the most held since the last reset.
    std::int64_t residentBytes() const;
    std::int64_t shardBytes() const; // the part that persists between uses, wherever it is
    std::int64_t peakResidentBytes() const;
    void resetPeakResidentBytes();

private:
    // Units in id order, entries in model order; each entry's tensor index.
    std::vector<std::vector<size_t>> layOut(
        const std::vector<std::pair<std::string, torch::Tensor>>& tensors, ShardSpec shard);
    // Lays the units out and has `fill` build each from its tensors' indices.
    void fillUnits(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
        ShardSpec shard, const std::function<void(Unit&, const std::vector<size_t>&)>& fill);
    // Where this rank keeps a shard of `whole`.
    torch::TensorOptions shardOptions(const torch::Device& device) const;

    std::vector<Unit> m_units;
    std::int64_t m_peak = 0;
    bool m_shardOnHost = false;
};

} // namespace tb::train
