#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "dist/rendezvous.h"
#include "train/data_parallel.h"
#include "train/flat_parameters.h"

#include <optional>

namespace tb::train {

// This process's place in a run: one process, or a rank of a data-parallel
// job joined through torchrun's variables (docs/DISTRIBUTED.md).
class ParallelContext {
public:
    // Reads the rank environment and, when WORLD_SIZE > 1, joins the job
    // (rendezvous within distributed.timeout_seconds) and makes the groups
    // distributed.sharding needs: NCCL for a rank on a GPU, else Gloo.
    static common::Result<ParallelContext> join(
        const config::RunConfig& config, const c10::Device& device);

    bool distributed() const { return m_world.has_value(); }
    int rank() const { return m_environment.rank; }
    int worldSize() const { return m_environment.worldSize; }
    const dist::RankEnvironment& environment() const { return m_environment; }
    config::Sharding sharding() const { return m_sharding; }
    const DataParallelGroups& groups() const { return m_groups; }
    // What joining the job left to say (dist::World::warnings).
    std::vector<std::string> joinWarnings() const
    {
        return m_world ? m_world->warnings : std::vector<std::string>{};
    }
    // How FlatParameters splits the states on this rank.
    ShardSpec shardSpec() const;
    // This rank writes its shard of the model states into checkpoints (the
    // first replica of each shard does).
    bool writesShard() const;
    void barrier() const;

private:
    dist::RankEnvironment m_environment;
    std::optional<dist::World> m_world;
    config::Sharding m_sharding = config::Sharding::Ddp;
    DataParallelGroups m_groups;
};

} // namespace tb::train
