#pragma once

#include "dist/c10d_handles.h"
#include "dist/liveness.h"
#include "dist/rendezvous.h"

#include <memory>
#include <string>

// The concrete communicators, made by rendezvous(); private to core/dist.
namespace tb::dist {

// One group as rendezvous() plans it.
struct GroupDescription {
    std::string name; // "world", "node 1", "replicas of local rank 0"
    std::string storePrefix; // keeps the groups' store keys apart
    int rank = 0; // this process's rank inside the group
    int size = 1;
};

// A group of one: every collective is a local copy or nothing.
std::shared_ptr<Communicator> makeSelfCommunicator(std::string name);

// A Gloo (or, where LibTorch has it, NCCL) process group over a PrefixStore
// of `store`. Blocks until every member of the group has made its own; a
// group of one gives makeSelfCommunicator.
common::Result<std::shared_ptr<Communicator>> makeProcessGroupCommunicator(
    const GroupDescription& group, const RankEnvironment& environment,
    const RendezvousOptions& options, const StoreHandle& store, std::shared_ptr<Liveness> liveness);

} // namespace tb::dist
