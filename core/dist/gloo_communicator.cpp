#include "dist/collective_support.h"
#include "dist/communicators.h"

#include <cstdlib>
#include <functional>

namespace tb::dist {
namespace {

// A c10d work item, and what must happen on this rank once it finished (the
// emulations copy results out of temporaries). A failure becomes a
// CommunicationError whose message comes from the liveness check.
// Why a collective failed, with the ranks that died when a Liveness can tell.
std::string explainFailure(const Liveness* liveness, const std::string& operation,
    const std::string& group, const std::string& what)
{
    return liveness ? liveness->explainFailure(operation, group, what)
                    : operation + " on group '" + group + "' failed: " + what;
}

class TrackedWork final : public PendingWork {
public:
    TrackedWork(compat::WorkHandle work, std::function<void()> finish, std::string operation,
        std::string group, std::shared_ptr<Liveness> liveness)
        : m_work(std::move(work))
        , m_finish(std::move(finish))
        , m_operation(std::move(operation))
        , m_group(std::move(group))
        , m_liveness(std::move(liveness))
    {
    }

    void wait() override
    {
        if (m_done)
            return;
        try {
            m_work->wait();
        } catch (const std::exception& error) {
            throw CommunicationError(
                explainFailure(m_liveness.get(), m_operation, m_group, compat::describe(error)));
        }
        if (m_finish)
            m_finish();
        m_done = true;
    }

private:
    compat::WorkHandle m_work;
    std::function<void()> m_finish;
    std::string m_operation;
    std::string m_group;
    std::shared_ptr<Liveness> m_liveness;
    bool m_done = false;
};

// A c10d process group behind Communicator. `native` (NCCL) has bf16
// all-reduce, all-gather into one tensor and reduce-scatter; Gloo in 1.13 has
// none of them, so they are emulated (docs/DISTRIBUTED_COMM.md): the same
// numbers, more bytes on the wire.
class ProcessGroupCommunicator final : public Communicator {
public:
    ProcessGroupCommunicator(compat::GroupHandle group, GroupDescription description, bool native,
        std::shared_ptr<Liveness> liveness)
        : m_group(std::move(group))
        , m_description(std::move(description))
        , m_native(native)
        , m_liveness(std::move(liveness))
    {
    }

    int rank() const override { return m_description.rank; }
    int size() const override { return m_description.size; }
    std::string name() const override { return m_description.name; }

    Work allReduceSum(torch::Tensor tensor) override
    {
        checkContiguous("all-reduce", tensor);
        m_stats.allReduce(tensor, size());
        if (m_native || !isNarrowFloat(tensor))
            return allReduceInPlace(tensor.detach(), {});
        // Gloo in 1.13 cannot sum bf16: sum an fp32 copy and round once.
        torch::Tensor wide = tensor.detach().to(torch::kFloat32);
        return allReduceInPlace(wide, [tensor, wide] { tensor.detach().copy_(wide); });
    }

    Work allGather(torch::Tensor output, torch::Tensor input) override
    {
        checkAllGatherArguments(output, input, size());
        m_stats.allGather(output, size());
        if (m_native) {
            torch::Tensor flatOutput = output.detach().view(-1);
            torch::Tensor flatInput = input.detach().view(-1);
            return track("all-gather",
                [&] { return m_group->_allgather_base(flatOutput, flatInput); }, {});
        }
        // The list form into temporaries, then one copy per rank into the flat
        // output below autograd (the copy must not bump its version counter).
        std::vector<torch::Tensor> inputs{bitsView(input.detach()).view(-1)};
        std::vector<torch::Tensor> pieces;
        for (int index = 0; index < size(); ++index)
            pieces.push_back(torch::empty_like(inputs.front()));
        std::vector<std::vector<torch::Tensor>> outputs{pieces};
        return track("all-gather", [&] { return m_group->allgather(outputs, inputs); },
            [output, pieces] { copySlicesWithoutVersionBump(output, pieces); });
    }

    Work reduceScatterSum(torch::Tensor output, torch::Tensor input) override
    {
        checkReduceScatterArguments(output, input, size());
        m_stats.reduceScatter(input, size());
        if (m_native) {
            torch::Tensor flatOutput = output.detach().view(-1);
            torch::Tensor flatInput = input.detach().view(-1);
            return track("reduce-scatter",
                [&] { return m_group->_reduce_scatter_base(flatOutput, flatInput); }, {});
        }
        // All-reduce the whole buffer, keep this rank's slice.
        torch::Tensor summed = input.detach().view(-1);
        if (isNarrowFloat(summed))
            summed = summed.to(torch::kFloat32);
        const std::int64_t slice = output.numel();
        const std::int64_t offset = slice * rank();
        return allReduceInPlace(summed, [output, summed, slice, offset] {
            output.detach().view(-1).copy_(summed.narrow(0, offset, slice));
        });
    }

    Work broadcast(torch::Tensor tensor, int root) override
    {
        checkContiguous("broadcast", tensor);
        m_stats.broadcast(tensor);
        c10d::BroadcastOptions options;
        options.rootRank = root;
        // In place: the bits view shares the tensor's storage.
        std::vector<torch::Tensor> tensors{m_native ? tensor.detach() : bitsView(tensor.detach())};
        return track("broadcast", [&] { return m_group->broadcast(tensors, options); }, {});
    }

    void barrier() override
    {
        m_stats.barrier();
        track("barrier", [&] { return m_group->barrier(); }, {})->wait();
    }

    CommunicationStats stats() const override { return m_stats.snapshot(); }

private:
    Work allReduceInPlace(torch::Tensor tensor, std::function<void()> finish)
    {
        std::vector<torch::Tensor> tensors{std::move(tensor)};
        c10d::AllreduceOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        return track(
            "all-reduce", [&] { return m_group->allreduce(tensors, options); }, std::move(finish));
    }

    // Issues a collective and tracks it. Gloo can fail already when a
    // collective is issued (a peer's connection closed between two of them):
    // that failure is explained like one at wait().
    template <typename Issue>
    Work track(const char* operation, Issue&& issue, std::function<void()> finish)
    {
        compat::WorkHandle work;
        try {
            work = issue();
        } catch (const std::exception& error) {
            throw CommunicationError(explainFailure(
                m_liveness.get(), operation, m_description.name, compat::describe(error)));
        }
        return std::make_unique<TrackedWork>(
            std::move(work), std::move(finish), operation, m_description.name, m_liveness);
    }

    compat::GroupHandle m_group;
    GroupDescription m_description;
    bool m_native;
    std::shared_ptr<Liveness> m_liveness;
    StatsCounter m_stats;
};

bool isLoopback(const std::string& host)
{
    return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// The address Gloo binds: GLOO_SOCKET_IFNAME when set (as torch does), the
// loopback address for a job on one machine, else this host's own name.
std::shared_ptr<::gloo::transport::Device> glooDevice(const RankEnvironment& environment)
{
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
        return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    if (isLoopback(environment.masterAddr))
        return c10d::ProcessGroupGloo::createDeviceForHostname(environment.masterAddr);
    return c10d::ProcessGroupGloo::createDefaultDevice();
}

compat::GroupHandle makeGlooGroup(const compat::StoreHandle& store, const GroupDescription& group,
    const RankEnvironment& environment, const RendezvousOptions& options)
{
    auto glooOptions =
        c10d::ProcessGroupGloo::Options::create(compat::toMilliseconds(options.timeoutSeconds));
    glooOptions->devices.push_back(glooDevice(environment));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, group.rank, group.size, glooOptions);
}

#ifdef USE_C10D_NCCL
compat::GroupHandle makeNcclGroup(const compat::StoreHandle& store, const GroupDescription& group,
    const RendezvousOptions& options)
{
    auto ncclOptions = c10d::ProcessGroupNCCL::Options::create();
    ncclOptions->timeout = compat::toMilliseconds(options.timeoutSeconds);
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, group.rank, group.size, ncclOptions);
}
#endif

} // namespace

common::Result<std::shared_ptr<Communicator>> makeProcessGroupCommunicator(
    const GroupDescription& group, const RankEnvironment& environment,
    const RendezvousOptions& options, const compat::StoreHandle& store,
    std::shared_ptr<Liveness> liveness)
{
    if (group.size == 1)
        return makeSelfCommunicator(group.name);
    auto groupStore = c10::make_intrusive<c10d::PrefixStore>(group.storePrefix, store);
    try {
        if (options.backend == Backend::Gloo) {
            std::shared_ptr<Communicator> communicator = std::make_shared<ProcessGroupCommunicator>(
                makeGlooGroup(groupStore, group, environment, options), group, false,
                std::move(liveness));
            return communicator;
        }
#ifdef USE_C10D_NCCL
        std::shared_ptr<Communicator> communicator = std::make_shared<ProcessGroupCommunicator>(
            makeNcclGroup(groupStore, group, options), group, true, std::move(liveness));
        return communicator;
#else
        return common::Error{"backend nccl: this LibTorch was built without CUDA/NCCL",
            "use the gloo backend on this machine"};
#endif
    } catch (const std::exception& error) {
        return common::Error{"could not make the process group '" + group.name + "' (rank "
                + std::to_string(group.rank) + " of " + std::to_string(group.size)
                + "): " + compat::describe(error),
            {}};
    }
}

} // namespace tb::dist
