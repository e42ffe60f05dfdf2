#pragma once

#include <c10/core/Event.h>
#include <torch/torch.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tb::train {

struct TrainableParameter {
    std::string name; // Hugging Face / PEFT-internal name ("model.norm.weight")
    torch::Tensor tensor; // the model's parameter
    bool decay = true; // AdamW weight decay applies (not to norms and biases)
};

// The group of a parameter: 1 + i for decoder layer i ("model.layers.<i>."),
// kEmbeddingUnit for the token embedding (and so for a head tied to it),
// kHeadUnit for the rest (the final norm, lm_head). Units are what ZeRO-3 /
// FSDP gather and free together, and the buckets gradients travel in; the
// embedding and the head are apart because they are used at opposite ends
// of the step (the embedding's backward does not read its weight).
inline constexpr int kEmbeddingUnit = 0;
inline constexpr int kHeadUnit = -1;
int unitOfParameter(const std::string& name);

// How the flat buffers are split across the ranks of a shard group (ZeRO,
// FSDP). count 1: every rank holds everything (one process, or DDP).
struct ShardSpec {
    int rank = 0;
    int count = 1;
    // ZeRO-3 / FSDP: the model-precision values are only the rank's shard
    // between uses; the full unit is gathered for forward and backward.
    bool parameters = false;
    // ZeRO-2 / ZeRO-3 / FSDP: a unit's full gradient exists only while its
    // backward runs; what persists is the rank's shard of the sum.
    bool gradients = false;
};

// Bytes held now, per kind, counting each storage once (aliases are free).
// The optimizer's moments are FlatAdamW::residentBytes().
struct ResidentStateBytes {
    std::int64_t parameters = 0; // model-precision values
    std::int64_t gradients = 0; // model-precision gradients
    std::int64_t master = 0; // master weights and their gradients, when separate
    bool masterOnHost = false; // offloaded: `master` (and the optimizer) is host memory
};

// The trainable parameters of a model laid out in flat buffers, one per unit
// (unitOfParameter), so the optimizer, the gradient norm, communication and
// checkpoints touch a few large tensors instead of hundreds of small ones
// (LIBTORCH.md, "Optimizer").
//
// The model's parameters become views into their unit's `values`, their
// gradients views into its `gradients`, so backward accumulates straight into
// the flat buffer. Each unit also has a master copy and master gradient,
// covering only this rank's shard: with one rank and the same dtype they are
// the values and gradients themselves; with a wider master type (bf16
// compute, fp32 master) or sharding they are buffers of their own. Units are
// padded with zeros to a multiple of the shard count.
//
// Inside a unit, parameters that take weight decay come first: elements
// [0, decayCount) of the unit.
//
// Offload (a model on a GPU): the master weights, their gradients and so the
// optimizer's moments live in pinned host memory. Gradients sum on the GPU
// over an optimizer step's micro-batches, then leave it by asynchronous
// copies as soon as each unit's are final (reduced, under data parallelism;
// they overlap the rest of the last backward) and are added on the host when
// drained; updated weights return by asynchronous copies the next forward
// waits for in stream order.
class FlatParameters {
public:
    // `initialMaster`, when given, holds the exact starting value of each
    // parameter in at least the master precision (e.g. the fp32 weights a
    // bf16 model was rounded from), in the order of `parameters`.
    // `offloadMaster`: the master and its gradient in host memory (pinned
    // for a GPU model; a CPU model, which only tests offload, gets buffers of
    // its own there).
    FlatParameters(std::vector<TrainableParameter> parameters, torch::ScalarType masterType,
        const std::vector<torch::Tensor>& initialMaster = {}, ShardSpec shard = {},
        bool offloadMaster = false);

    // Elements [begin, begin + out.numel()) of parameter `index`, flattened,
    // written into `out` in its dtype.
    using SliceReader =
        std::function<void(size_t index, std::int64_t begin, const torch::Tensor& out)>;
    // A sharded load (ZeRO-3, FSDP: `shard.parameters`): the parameters may
    // have no storage; each unit's master shard is filled by `read` with this
    // rank's elements only, and the model's values stay released until
    // gathered, so no rank holds a whole unit before its first forward. The
    // buffers live on `device`.
    FlatParameters(std::vector<TrainableParameter> parameters, torch::ScalarType masterType,
        ShardSpec shard, bool offloadMaster, const torch::Device& device, const SliceReader& read);

    struct Segment {
        std::string name;
        int unit = 0; // index into units()
        std::int64_t offset = 0; // within the unit
        std::vector<std::int64_t> shape;
        std::int64_t numel = 0;
        bool decay = true;
    };
    struct Unit {
        int id = 0; // unitOfParameter's number
        std::vector<size_t> segments;
        std::int64_t numel = 0; // real elements
        std::int64_t paddedNumel = 0; // numel rounded up to a multiple of the shard count
        std::int64_t shardNumel = 0; // paddedNumel / shard count
        std::int64_t shardOffset = 0; // this rank's shard begins here
        std::int64_t decayCount = 0;
        torch::Tensor values; // model dtype, [paddedNumel]
        torch::Tensor gradients; // model dtype, [paddedNumel]
        torch::Tensor master; // master dtype, [shardNumel]
        torch::Tensor masterGradients; // master dtype, [shardNumel]
        bool masterSeparate = false; // master is not a view of values
        bool masterGradientsSeparate = false;

        // This rank's decayed elements, as [begin, end) in shard coordinates.
        std::pair<std::int64_t, std::int64_t> shardDecayRange() const;
    };

    const std::vector<Segment>& segments() const { return m_segments; }
    // The model's parameter behind segment s.
    const torch::Tensor& segmentTensor(size_t s) const
    {
        return m_parameters[m_parameterOf[s]].tensor;
    }
    std::vector<Unit>& units() { return m_units; }
    const std::vector<Unit>& units() const { return m_units; }
    const ShardSpec& shard() const { return m_shard; }
    std::int64_t numel() const { return m_numel; }
    torch::ScalarType masterType() const { return m_masterType; }
    torch::ScalarType modelType() const { return m_modelType; }
    bool offloaded() const { return m_offloaded; }

    // One parameter's master value, shaped like the parameter. Only without
    // sharding (a sharded run gathers the whole unit first).
    torch::Tensor masterView(const Segment& slot) const;

    // After each micro-batch's backward: add the model-precision gradient
    // into the master gradient and zero it (nothing to do when they are one
    // buffer). Units with sharded gradients are reduced by the data-parallel
    // engine instead and are skipped. Offloaded, the gradients stay on the
    // model's device until `lastMicroStep` (of the optimizer step), are then
    // staged to the host and drained.
    void accumulateGradients(bool lastMicroStep);
    void accumulateUnitGradients(Unit& unit);
    // Offload: starts copying `gradient` (on the GPU; the unit's whole
    // gradient, or this rank's reduced shard) to the host, to be added into
    // the unit's master gradient by drainHostGradients(), which waits for
    // every copy started. The GPU tensor may be reused once this returns.
    void stageGradientToHost(Unit& unit, const torch::Tensor& gradient);
    void drainHostGradients();
    // The unit's master values in the model's dtype on the model's device:
    // the master itself where that is the same tensor type and `fresh` is
    // false, else a new tensor (what an all-gather sends).
    torch::Tensor masterAsModel(const Unit& unit, bool fresh) const;
    void zeroGradients();
    // Sum of squares of this rank's master gradients, in double: a scalar on
    // the first unit's device, or read back.
    torch::Tensor gradientSquares() const;
    double localGradientSquares() const;
    void scaleGradients(double factor);
    // Scales the master gradient down to maxNorm when `norm` (the global L2
    // norm, every rank's) is above it; maxNorm <= 0: never. As
    // torch.nn.utils.clip_grad_norm_.
    void clipToNorm(double norm, double maxNorm);
    // One process: the global L2 norm of the master gradient, clipped with
    // clipToNorm; returns the norm before clipping.
    double clipGradientNorm(double maxNorm);
    // After the optimizer updated the master: refresh the model's copy of the
    // units whose full values this rank holds alone (no sharding).
    void copyMasterToModel();

    // Storage of sharded buffers comes and goes (FSDP's resharding): the
    // tensors, and the parameter views into them, stay; their memory is
    // released and allocated again, so autograd's saved views stay valid.
    void releaseValues(Unit& unit);
    void allocateValues(Unit& unit);
    void releaseGradients(Unit& unit);
    void allocateGradients(Unit& unit); // zero-filled

    ResidentStateBytes residentBytes() const;
    // The most held at once, per kind, since the last reset (the sharded
    // buffers peak inside forward and backward).
    ResidentStateBytes peakResidentBytes() const;
    void resetPeakResidentBytes();

private:
    // Segments and units in their order; the model types and the shard.
    void layOut(
        const std::vector<TrainableParameter>& parameters, std::vector<size_t>& parameterOf);
    void makeMasterGradients(Unit& unit, const torch::Device& device);

    std::vector<TrainableParameter> m_parameters;
    std::vector<Segment> m_segments;
    std::vector<size_t> m_parameterOf; // by segment: index into m_parameters
    std::vector<Unit> m_units;
    ShardSpec m_shard;
    ResidentStateBytes m_peak;
    struct HostCopy {
        size_t unit = 0;
        torch::Tensor staging; // host memory (pinned from a GPU), the gradient's dtype
        std::optional<c10::Event> done; // from a GPU: recorded on its stream after the copy
    };
    std::vector<HostCopy> m_hostCopies; // offload: gradient copies in flight
    bool m_offloaded = false;
    std::int64_t m_numel = 0;
    torch::ScalarType m_masterType = torch::kFloat;
    torch::ScalarType m_modelType = torch::kFloat;
};

} // namespace tb::train
