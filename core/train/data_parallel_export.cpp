#include "train/data_parallel.h"

#include <algorithm>

// What the data-parallel engine gives outside the step: whole units of
// the master for exports and checkpoints, and its communication figures.
namespace tb::train {

void DataParallel::gatherMasterUnit(size_t u, bool keep, std::map<std::string, torch::Tensor>& into)
{
    torch::NoGradGuard noGrad;
    const FlatParameters::Unit& unit = m_parameters.units()[u];
    torch::Tensor whole = unit.master;
    if (m_parameters.shard().count > 1) {
        // Collectives run where the model is (an offloaded master is not);
        // one unit is whole on the device at a time, and only the rank that
        // keeps the values copies it out.
        const torch::Tensor shard = unit.master.to(unit.values.device());
        torch::Tensor gathered = torch::empty({unit.paddedNumel}, shard.options());
        m_groups.shard->allGather(gathered, shard)->wait();
        if (!keep)
            return;
        whole = gathered.to(torch::kCPU);
    }
    for (const size_t s : unit.segments) {
        const FlatParameters::Segment& slot = m_parameters.segments()[s];
        into.emplace(slot.name, whole.narrow(0, slot.offset, slot.numel).view(slot.shape));
    }
}

std::map<std::string, torch::Tensor> DataParallel::gatherMasterValues(bool keep)
{
    std::map<std::string, torch::Tensor> values;
    for (size_t u = 0; u < m_parameters.units().size(); ++u)
        gatherMasterUnit(u, keep, values);
    return values;
}

std::map<std::string, torch::Tensor> DataParallel::gatherUnit(int id, bool keep)
{
    std::map<std::string, torch::Tensor> values;
    const auto& units = m_parameters.units();
    for (size_t u = 0; u < units.size(); ++u) {
        if (units[u].id == id)
            gatherMasterUnit(u, keep, values);
    }
    if (m_frozen) {
        if (const auto frozen = m_frozen->unitWithId(id))
            ensureFrozenGathered(*frozen);
    }
    return values;
}

void DataParallel::releaseUnit(int id)
{
    if (m_frozen) {
        if (const auto frozen = m_frozen->unitWithId(id))
            releaseFrozen(*frozen);
    }
}

dist::CommunicationStats DataParallel::stats() const
{
    dist::CommunicationStats total;
    std::vector<const dist::Communicator*> seen;
    for (const auto& group : {m_groups.world, m_groups.shard, m_groups.replicas}) {
        if (!group || std::find(seen.begin(), seen.end(), group.get()) != seen.end())
            continue;
        seen.push_back(group.get());
        const dist::CommunicationStats s = group->stats();
        total.allReduceBytes += s.allReduceBytes;
        total.allGatherBytes += s.allGatherBytes;
        total.reduceScatterBytes += s.reduceScatterBytes;
        total.broadcastBytes += s.broadcastBytes;
        total.collectives += s.collectives;
    }
    return total;
}

} // namespace tb::train
