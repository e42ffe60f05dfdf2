#include "train/parallel_context.h"

namespace tb::train {

using config::Sharding;

common::Result<ParallelContext> ParallelContext::join(
    const config::RunConfig& config, const c10::Device& device)
{
    auto environment = dist::readRankEnvironment();
    if (!environment)
        return environment.error();
    ParallelContext context;
    context.m_environment = *environment;
    context.m_sharding = config.distributed.sharding;
    if (!environment->distributed())
        return context;
    dist::RendezvousOptions options;
    options.backend = device.is_cuda() ? dist::Backend::Nccl : dist::Backend::Gloo;
    options.timeoutSeconds = config.distributed.timeoutSeconds;
    if (device.is_cuda())
        // A device index is a signed byte whose sign means something (-1:
        // none): widened as it is.
        options.cudaDevice = device.index(); // NOLINT(bugprone-signed-char-misuse)
    auto world = dist::rendezvous(*environment, options);
    if (!world)
        return world.error();
    context.m_world = std::move(world).value();
    DataParallelGroups& groups = context.m_groups;
    groups.world = context.m_world->all;
    switch (context.m_sharding) {
    case Sharding::Ddp:
        break;
    case Sharding::FsdpHybrid:
        groups.shard = context.m_world->node;
        if (context.m_world->replicas && context.m_world->replicas->size() > 1)
            groups.replicas = context.m_world->replicas;
        break;
    default:
        groups.shard = context.m_world->all;
        break;
    }
    return context;
}

ShardSpec ParallelContext::shardSpec() const
{
    return distributed() ? shardSpecFor(m_sharding, m_groups) : ShardSpec{};
}

bool ParallelContext::writesShard() const
{
    if (!distributed() || !m_groups.shard)
        return rank() == 0;
    // Hybrid: the shard group of node 0 (the other nodes hold replicas).
    return !m_groups.replicas || m_groups.replicas->rank() == 0;
}

void ParallelContext::barrier() const
{
    if (m_world)
        m_world->all->barrier();
}

} // namespace tb::train
