#pragma once

#include "config/run_config.h"
#include "dist/communicator.h"
#include "train/flat_parameters.h"
#include "train/frozen_shards.h"
#include "train/llama_model.h"

#include <torch/torch.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>

namespace tb::train {

// The process groups a strategy uses (docs/DISTRIBUTED.md).
struct DataParallelGroups {
    std::shared_ptr<dist::Communicator> world; // every rank
    // The ranks that split the model states between them: every rank for
    // ZeRO and FSDP, the node's ranks for HYBRID_SHARD, none for DDP.
    std::shared_ptr<dist::Communicator> shard;
    // The ranks holding the same shard on other nodes (HYBRID_SHARD only).
    std::shared_ptr<dist::Communicator> replicas;
};

// What a strategy partitions, for this rank (count 1 for DDP).
ShardSpec shardSpecFor(config::Sharding sharding, const DataParallelGroups& groups);

// The data-parallel engine of one rank. It owns no tensors: it drives the
// communication of FlatParameters' units from autograd's gradient hooks and
// the model's forward hooks.
//
// Gradients are summed, not averaged: the trainer normalises each rank's
// loss by the loss tokens of the whole global batch (sumOverWorld), so the
// sum over ranks is the gradient of the global batch, as one process
// computes it.
//
// - DDP: a unit's gradients are all-reduced (in fp32) as soon as backward
//   has produced all of them, while backward goes on with the layers below;
//   micro-steps that do not end the optimizer step do not communicate.
// - ZeRO-1: as DDP, but each unit's gradient is reduce-scattered into the
//   rank's fp32 shard on the last micro-step; after the update the shards
//   are all-gathered into the replicated values.
// - ZeRO-2: the reduce-scatter happens on every micro-step and a unit's full
//   gradient exists only during its backward.
// - ZeRO-3 / FSDP: a unit's values exist only while it runs: gathered before
//   the layer's forward (the next layer prefetched), freed after it
//   (FULL_SHARD) or after its backward (SHARD_GRAD_OP), gathered again
//   before its backward (the layer below prefetched). The embedding is
//   gathered for its forward only (its backward needs the token ids, not
//   the weight); its gradient exists from just before its backward. The
//   head (final norm, lm_head) is gathered, prefetched by the last layer,
//   from the loss to the end of its backward. A tied embedding is read at
//   both ends and stays gathered from forward to the end of backward, as
//   FSDP's root does. HYBRID_SHARD shards inside the node and all-reduces
//   the shards across nodes.
// A frozen base (LoRA, QLoRA) sharded by FrozenShards follows its layer:
// gathered with the layer's trainable unit, freed after the layer's forward
// and, in backward, once the gradient of the layer's input is complete (the
// base's matmuls produce it; LoRA's own gradients can be in earlier).
// A unit's gathered values are freed as soon as its gradients are in. At
// most two reductions are in flight under DDP and ZeRO-1, one under the
// sharded-gradient strategies; the oldest is finished before another
// starts, which bounds the full gradients alive at once.
class DataParallel : public ForwardHooks {
public:
    // `frozen`: the model's frozen tensors, sharded (ZeRO-3, FSDP); null
    // when they are replicated.
    DataParallel(LlamaForCausalLm& model, FlatParameters& parameters, config::Sharding sharding,
        DataParallelGroups groups, FrozenShards* frozen = nullptr);
    ~DataParallel() override;
    DataParallel(const DataParallel&) = delete;
    DataParallel& operator=(const DataParallel&) = delete;

    // Around each micro-batch's backward. `last`: it ends the optimizer step.
    void beginMicroStep(bool last);
    // After backward returned: reduces the units whose hooks did not fire
    // (unused parameters), waits for every collective, folds what was not
    // communicated into the master gradients.
    void endMicroStep();

    double sumOverWorld(double value);
    // The same for a tensor, summed in place on the model's device and
    // returned there, not read back.
    torch::Tensor sumOverWorld(torch::Tensor values);
    // The global sum of squares of the gradient, every rank the same (after
    // the step's last endMicroStep), on the model's device, not read back.
    torch::Tensor gradientSquares();
    // After the optimizer updated this rank's master shards: the model's
    // replicated values refreshed from them (all-gathered under ZeRO-1/2).
    void afterOptimizerStep();
    // Frees the gathered units (after evaluation under ZeRO-3 / FSDP).
    void releaseGathered();
    // Every trainable parameter's master value, whole (a collective under
    // sharding, every rank calls it): for the adapter. Sharded, the units
    // are gathered one at a time and, where `keep` (the rank that writes),
    // copied to host memory; the other ranks get an empty map.
    std::map<std::string, torch::Tensor> gatherMasterValues(bool keep);
    // One unit (unitOfParameter's id) for an export that goes a unit at a
    // time, every rank in the same order: the master values of its
    // trainable parameters (host memory, where `keep`; a collective when the
    // master is sharded) and, when the frozen base is sharded, its frozen
    // part gathered in place. releaseUnit frees the frozen part again.
    std::map<std::string, torch::Tensor> gatherUnit(int id, bool keep);
    void releaseUnit(int id);

    dist::CommunicationStats stats() const;
    config::Sharding sharding() const { return m_sharding; }

    void beforeEmbedding() override;
    torch::Tensor afterEmbedding(torch::Tensor hidden) override;
    void beforeLayer(size_t layer) override;
    torch::Tensor afterLayer(size_t layer, torch::Tensor hidden) override;
    void beforeHead() override;

    // From the gradient accumulators' hooks.
    void parameterGradientReady(size_t unit);

private:
    struct Reduction {
        size_t unit = 0;
        dist::Work work;
        torch::Tensor input; // kept alive while the collective runs
        torch::Tensor output;
    };
    struct Gather {
        dist::Work work;
        torch::Tensor source;
    };

    bool shardsParameters() const { return m_parameters.shard().parameters; }
    bool shardsGradients() const { return m_parameters.shard().gradients; }
    bool reshardAfterForward() const;
    torch::Tensor scalarBuffer(double value) const; // on the model's device
    static int layerId(size_t layer) { return static_cast<int>(layer) + 1; }
    // The trainable and frozen units of a unitOfParameter id, where they exist.
    std::optional<size_t> trainableUnit(int id) const;
    std::optional<size_t> frozenUnit(int id) const;
    bool hasUnits(int id) const;
    bool staysGathered(size_t unit) const;
    void startReduction(size_t unit);
    void finishReduction(Reduction& reduction);
    void finishOldestReduction();
    void startGather(size_t unit);
    void ensureGathered(size_t unit);
    void release(size_t unit);
    void beforeLayerBackward(size_t layer);
    // Gathers, prefetches and releases the units of an id (its trainable
    // unit and its frozen one, whichever exist).
    void gatherUnits(int id);
    void prefetchUnits(int id);
    void releaseUnits(int id);
    // Under sharded gradients: the id's full gradient, just before backward writes it.
    void allocateGradientsOf(int id);
    void startFrozenGather(size_t unit);
    void ensureFrozenGathered(size_t unit);
    // The master values of trainable unit `u`, whole (see gatherMasterValues).
    void gatherMasterUnit(size_t u, bool keep, std::map<std::string, torch::Tensor>& into);
    void releaseFrozen(size_t unit);
    void releaseAllFrozen();

    LlamaForCausalLm& m_model;
    FlatParameters& m_parameters;
    config::Sharding m_sharding;
    DataParallelGroups m_groups;
    std::vector<c10::intrusive_ptr<torch::autograd::Node>>
        m_accumulators; // keeps hooks' owners alive
    std::vector<int> m_remaining; // per unit: gradients not yet produced in this backward
    std::vector<bool> m_reduced; // per unit, in this micro-step
    std::vector<bool> m_gathered; // per unit: values hold the full unit
    std::map<size_t, Gather> m_gathers; // prefetches in flight
    FrozenShards* m_frozen = nullptr;
    std::map<size_t, Gather> m_frozenGathers; // by frozen unit index
    std::deque<Reduction> m_inFlight;
    std::map<int, size_t> m_unitById; // trainable units by unitOfParameter id
    size_t m_layers = 0;
    bool m_embeddingIsHead = false; // tied embeddings

    bool m_communicating = false;
};

} // namespace tb::train
