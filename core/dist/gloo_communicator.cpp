#include "dist/collective_support.h"
#include "dist/communicators.h"

#include <cstdlib>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tb::dist {
namespace {

// Why a collective failed, with the ranks that died when a Liveness can tell.
std::string explainFailure(const Liveness* liveness, const std::string& operation,
    const std::string& group, const std::string& what)
{
    return liveness ? liveness->explainFailure(operation, group, what)
                    : operation + " on group '" + group + "' failed: " + what;
}

// A c10d work item. A failure becomes a CommunicationError whose message
// comes from the liveness check.
class TrackedWork final : public PendingWork {
public:
    TrackedWork(WorkHandle work, std::string operation, std::string group,
        std::shared_ptr<Liveness> liveness)
        : m_work(std::move(work))
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
                explainFailure(m_liveness.get(), m_operation, m_group, describeTorchError(error)));
        }
        m_done = true;
    }

private:
    WorkHandle m_work;
    std::string m_operation;
    std::string m_group;
    std::shared_ptr<Liveness> m_liveness;
    bool m_done = false;
};

// A c10d process group (Gloo or NCCL) behind Communicator. Both carry every
// collective the strategies use natively in LibTorch 2.x: all-reduce in any
// float dtype, all-gather into one tensor, reduce-scatter of one tensor.
class ProcessGroupCommunicator final : public Communicator {
public:
    ProcessGroupCommunicator(
        GroupHandle group, GroupDescription description, std::shared_ptr<Liveness> liveness)
        : m_group(std::move(group))
        , m_description(std::move(description))
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
        std::vector<torch::Tensor> tensors{tensor.detach()};
        c10d::AllreduceOptions options;
        options.reduceOp = c10d::ReduceOp::SUM;
        return track("all-reduce", [&] { return m_group->allreduce(tensors, options); });
    }

    Work allGather(torch::Tensor output, torch::Tensor input) override
    {
        checkAllGatherArguments(output, input, size());
        m_stats.allGather(output, size());
        torch::Tensor flatOutput = output.detach().view(-1);
        torch::Tensor flatInput = input.detach().view(-1);
        // Gloo copies into the output with ordinary tensor ops, which would
        // bump its version counter (shared with the parameters autograd saved
        // from it: FSDP's re-gather). The backend runs the work with the
        // issuing thread's dispatch state, so issuing it below the
        // ADInplaceOrView layer keeps the counter where it was (communicator.h).
        at::AutoDispatchBelowADInplaceOrView belowAutograd;
        return track("all-gather", [&] { return m_group->_allgather_base(flatOutput, flatInput); });
    }

    Work reduceScatterSum(torch::Tensor output, torch::Tensor input) override
    {
        checkReduceScatterArguments(output, input, size());
        m_stats.reduceScatter(input, size());
        torch::Tensor flatOutput = output.detach().view(-1);
        torch::Tensor flatInput = input.detach().view(-1);
        return track(
            "reduce-scatter", [&] { return m_group->_reduce_scatter_base(flatOutput, flatInput); });
    }

    Work broadcast(torch::Tensor tensor, int root) override
    {
        checkContiguous("broadcast", tensor);
        m_stats.broadcast(tensor);
        c10d::BroadcastOptions options;
        options.rootRank = root;
        std::vector<torch::Tensor> tensors{tensor.detach()};
        return track("broadcast", [&] { return m_group->broadcast(tensors, options); });
    }

    void barrier() override
    {
        m_stats.barrier();
        track("barrier", [&] { return m_group->barrier(); })->wait();
    }

    CommunicationStats stats() const override { return m_stats.snapshot(); }

private:
    // Issues a collective and tracks it. Gloo can fail already when a
    // collective is issued (a peer's connection closed between two of them):
    // that failure is explained like one at wait().
    template <typename Issue> Work track(const char* operation, Issue&& issue)
    {
        WorkHandle work;
        try {
            work = issue();
        } catch (const std::exception& error) {
            throw CommunicationError(explainFailure(
                m_liveness.get(), operation, m_description.name, describeTorchError(error)));
        }
        return std::make_unique<TrackedWork>(
            std::move(work), operation, m_description.name, m_liveness);
    }

    GroupHandle m_group;
    GroupDescription m_description;
    std::shared_ptr<Liveness> m_liveness;
    StatsCounter m_stats;
};

bool isLoopback(const std::string& host)
{
    return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// This machine's address on the route to `host` (a UDP socket connected
// there sends nothing), or empty.
std::string localAddressTowards(const std::string& host)
{
    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0)
        return {};
    std::string address;
    const int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_storage local{};
    socklen_t length = sizeof local;
    char text[INET6_ADDRSTRLEN] = {};
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0
        && ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0
        && ::getnameinfo(reinterpret_cast<sockaddr*>(&local), length, text, sizeof text, nullptr, 0,
               NI_NUMERICHOST)
            == 0)
        address = text;
    if (fd >= 0)
        ::close(fd);
    ::freeaddrinfo(found);
    return address;
}

// The address Gloo binds: GLOO_SOCKET_IFNAME when set (as torch does), the
// loopback address for a job on one machine, else the address this machine
// reaches the master from. Not the host name: Debian and Ubuntu map it to
// 127.0.1.1, where no other node can connect, and a node with several
// interfaces must use the one its peers are on.
std::shared_ptr<::gloo::transport::Device> glooDevice(const RankEnvironment& environment)
{
    if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface)
        return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
    if (isLoopback(environment.masterAddr))
        return c10d::ProcessGroupGloo::createDeviceForHostname(environment.masterAddr);
    if (const std::string local = localAddressTowards(environment.masterAddr); !local.empty())
        return c10d::ProcessGroupGloo::createDeviceForHostname(local);
    return c10d::ProcessGroupGloo::createDefaultDevice();
}

GroupHandle makeGlooGroup(const StoreHandle& store, const GroupDescription& group,
    const RankEnvironment& environment, const RendezvousOptions& options)
{
    auto glooOptions =
        c10d::ProcessGroupGloo::Options::create(toMilliseconds(options.timeoutSeconds));
    glooOptions->devices.push_back(glooDevice(environment));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, group.rank, group.size, glooOptions);
}

#ifdef USE_C10D_NCCL
GroupHandle makeNcclGroup(
    const StoreHandle& store, const GroupDescription& group, const RendezvousOptions& options)
{
    auto ncclOptions = c10d::ProcessGroupNCCL::Options::create();
    ncclOptions->timeout = toMilliseconds(options.timeoutSeconds);
    auto backend =
        c10::make_intrusive<c10d::ProcessGroupNCCL>(store, group.rank, group.size, ncclOptions);
    if (options.cudaDevice >= 0)
        backend->setBoundDeviceId(
            at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(options.cudaDevice)));
    return backend;
}
#endif

} // namespace

common::Result<std::shared_ptr<Communicator>> makeProcessGroupCommunicator(
    const GroupDescription& group, const RankEnvironment& environment,
    const RendezvousOptions& options, const StoreHandle& store, std::shared_ptr<Liveness> liveness)
{
    if (group.size == 1)
        return makeSelfCommunicator(group.name);
    auto groupStore = c10::make_intrusive<c10d::PrefixStore>(group.storePrefix, store);
    try {
        if (options.backend == Backend::Gloo) {
            std::shared_ptr<Communicator> communicator = std::make_shared<ProcessGroupCommunicator>(
                makeGlooGroup(groupStore, group, environment, options), group, std::move(liveness));
            return communicator;
        }
#ifdef USE_C10D_NCCL
        std::shared_ptr<Communicator> communicator = std::make_shared<ProcessGroupCommunicator>(
            makeNcclGroup(groupStore, group, options), group, std::move(liveness));
        return communicator;
#else
        return common::Error{"backend nccl: this LibTorch was built without CUDA/NCCL",
            "use the gloo backend on this machine"};
#endif
    } catch (const std::exception& error) {
        return common::Error{"could not make the process group '" + group.name + "' (rank "
                + std::to_string(group.rank) + " of " + std::to_string(group.size)
                + "): " + describeTorchError(error),
            {}};
    }
}

} // namespace tb::dist
