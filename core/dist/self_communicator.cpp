#include "dist/collective_support.h"
#include "dist/communicators.h"

namespace tb::dist {
namespace {

// Size-1 groups (a world of one; the replica group on a single node) need no
// transport, but still keep the contract: checks, stats, no version bump.
class SelfCommunicator final : public Communicator {
public:
    explicit SelfCommunicator(std::string name)
        : m_name(std::move(name))
    {
    }

    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string name() const override { return m_name; }

    Work allReduceSum(torch::Tensor tensor) override
    {
        checkContiguous("all-reduce", tensor);
        m_stats.allReduce(tensor, 1);
        return std::make_unique<FinishedWork>();
    }

    Work allGather(torch::Tensor output, torch::Tensor input) override
    {
        checkAllGatherArguments(output, input, 1);
        copySlicesWithoutVersionBump(output, {input.detach()});
        m_stats.allGather(output, 1);
        return std::make_unique<FinishedWork>();
    }

    Work reduceScatterSum(torch::Tensor output, torch::Tensor input) override
    {
        checkReduceScatterArguments(output, input, 1);
        output.view(-1).copy_(input.view(-1));
        m_stats.reduceScatter(input, 1);
        return std::make_unique<FinishedWork>();
    }

    Work broadcast(torch::Tensor tensor, int root) override
    {
        if (root != 0)
            throw std::invalid_argument("broadcast on group '" + m_name + "': root "
                + std::to_string(root) + " is not a rank of a group of 1");
        m_stats.broadcast(tensor);
        return std::make_unique<FinishedWork>();
    }

    void barrier() override { m_stats.barrier(); }

    CommunicationStats stats() const override { return m_stats.snapshot(); }

private:
    std::string m_name;
    StatsCounter m_stats;
};

} // namespace

std::shared_ptr<Communicator> makeSelfCommunicator(std::string name)
{
    return std::make_shared<SelfCommunicator>(std::move(name));
}

} // namespace tb::dist
