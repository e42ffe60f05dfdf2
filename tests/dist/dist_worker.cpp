// One rank of a test job: reads torchrun's variables, joins the rendezvous and
// runs the scenario named on the command line, checking every result itself.
// Exit codes: 0 passed, 1 a wrong result, 2 bad usage or failed rendezvous,
// 3 a CommunicationError, 4 any other exception. Messages go to stderr.
#include "dist/rendezvous.h"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string.h> // strsignal
#include <string>
#include <thread>
#include <vector>

namespace {

using tb::dist::Communicator;
using tb::dist::World;

int g_rank = 0;

struct CheckFailed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void check(bool condition, const std::string& what)
{
    if (!condition)
        throw CheckFailed(what);
}

void checkEqual(const torch::Tensor& actual, const torch::Tensor& expected, const std::string& what)
{
    check(actual.scalar_type() == expected.scalar_type() && torch::equal(actual, expected),
        what + ": got " + actual.slice(0, 0, 6).toString() + " " + std::to_string(actual.numel())
            + " elements, first values differ from expected");
}

torch::Tensor indices(std::int64_t count)
{
    return torch::arange(count, torch::kFloat32);
}

// Sums over ranks of small integers: exact in fp32 and in bf16.
void checkAllReduce(Communicator& group, torch::ScalarType dtype, std::int64_t count)
{
    const int size = group.size();
    const auto pattern = torch::fmod(indices(count), 5.0) + 1.0;
    auto tensor = (pattern * (group.rank() + 1)).to(dtype);
    group.allReduceSum(tensor)->wait();
    checkEqual(tensor, (pattern * (size * (size + 1) / 2)).to(dtype),
        "all-reduce of " + std::to_string(count) + " " + c10::toString(dtype));
}

// Rank k's piece: values that are not round in bf16, so the bits must travel intact.
torch::Tensor gatherPiece(int rank, torch::ScalarType dtype, std::int64_t count)
{
    return (indices(count) / 3.0 + rank * 1000.0 + 0.25).to(dtype);
}

void checkAllGather(Communicator& group, torch::ScalarType dtype, std::int64_t count)
{
    auto output = torch::zeros({group.size() * count}, dtype);
    group.allGather(output, gatherPiece(group.rank(), dtype, count))->wait();
    std::vector<torch::Tensor> pieces;
    for (int rank = 0; rank < group.size(); ++rank)
        pieces.push_back(gatherPiece(rank, dtype, count));
    checkEqual(output, torch::cat(pieces), "all-gather of " + std::string(c10::toString(dtype)));
}

void checkReduceScatter(Communicator& group, std::int64_t slice)
{
    const int size = group.size();
    auto input = indices(size * slice) * (group.rank() + 1);
    auto output = torch::empty({slice});
    group.reduceScatterSum(output, input)->wait();
    const auto expected =
        indices(size * slice).narrow(0, group.rank() * slice, slice) * (size * (size + 1) / 2);
    checkEqual(output, expected, "reduce-scatter");
}

void checkBroadcast(Communicator& group, torch::ScalarType dtype, std::int64_t count, int root)
{
    const auto expected = (indices(count) / 7.0 + 3.0).to(dtype);
    auto tensor = group.rank() == root ? expected.clone() : torch::zeros({count}, dtype);
    group.broadcast(tensor, root)->wait();
    checkEqual(tensor, expected, "broadcast of " + std::string(c10::toString(dtype)));
}

// FSDP's use: autograd saved the gathered buffer for backward; gathering new
// data into it must not bump its version, or backward() refuses to run.
void checkAllGatherKeepsVersion(Communicator& group)
{
    const std::int64_t count = 37;
    auto gathered = torch::zeros({group.size() * count});
    auto parameterView = gathered.narrow(0, 0, count);
    auto weight = torch::ones({group.size() * count}, torch::requires_grad());
    auto loss = (weight * gathered).sum(); // saves `gathered` for the gradient of weight
    const auto version = gathered._version();
    group.allGather(gathered, gatherPiece(group.rank(), torch::kFloat32, count))->wait();
    check(gathered._version() == version && parameterView._version() == version,
        "all-gather bumped the version counter from " + std::to_string(version) + " to "
            + std::to_string(gathered._version()));
    loss.backward();
    checkEqual(weight.grad(), gathered, "gradient through the gathered buffer");
}

std::int64_t ring(std::int64_t bytes, int size)
{
    return bytes * (size - 1) / size;
}

void runCollectives(World& world)
{
    Communicator& all = *world.all;
    const int size = all.size();
    checkAllReduce(all, torch::kFloat32, 1001);
    checkAllReduce(all, torch::kBFloat16, 333);
    checkAllGather(all, torch::kFloat32, 37);
    checkAllGather(all, torch::kBFloat16, 37);
    checkReduceScatter(all, 13);
    checkBroadcast(all, torch::kFloat32, 101, size - 1);
    checkBroadcast(all, torch::kBFloat16, 55, 0);
    checkAllGatherKeepsVersion(all);
    all.barrier();

    const auto stats = all.stats();
    check(stats.allReduceBytes == 2 * ring(1001 * 4, size) + 2 * ring(333 * 2, size)
            && stats.allGatherBytes
                == ring(size * 37 * 4, size) + ring(size * 37 * 2, size) + ring(size * 37 * 4, size)
            && stats.reduceScatterBytes == ring(size * 13 * 4, size)
            // 8 checks above, this barrier and the rendezvous' closing barrier.
            && stats.broadcastBytes == 101 * 4 + 55 * 2 && stats.collectives == 10,
        "stats: all-reduce " + std::to_string(stats.allReduceBytes) + ", all-gather "
            + std::to_string(stats.allGatherBytes) + ", reduce-scatter "
            + std::to_string(stats.reduceScatterBytes) + ", broadcast "
            + std::to_string(stats.broadcastBytes) + ", collectives "
            + std::to_string(stats.collectives));

    // The node and replica groups hold the global ranks we expect.
    const auto& environment = world.environment;
    const int local = environment.localWorldSize;
    auto rankValue = torch::full({1}, static_cast<float>(environment.rank));
    auto nodeMembers = torch::zeros({local});
    world.node->allGather(nodeMembers, rankValue)->wait();
    checkEqual(nodeMembers, indices(local) + environment.nodeRank * local, "node group members");
    auto replicaMembers = torch::zeros({environment.nodeCount()});
    world.replicas->allGather(replicaMembers, rankValue)->wait();
    checkEqual(replicaMembers, indices(environment.nodeCount()) * local + environment.localRank,
        "replica group members");
    checkAllReduce(*world.node, torch::kFloat32, 17);
    checkAllReduce(*world.replicas, torch::kFloat32, 17);
    checkReduceScatter(*world.node, 5);
    all.barrier();
}

// Every live rank all-reduces until a collective fails: the one that hits
// the dead peer must say who died.
// SIGKILL closes the rank's sockets at once; SIGSTOP leaves them open and
// silent, so only the timeout ends the collective.
void runUntilFailure(World& world, int failingRank, int signal)
{
    if (world.environment.rank == failingRank) {
        std::fprintf(stderr, "rank %d: raising %s\n", failingRank, strsignal(signal));
        std::raise(signal);
    }
    auto tensor = torch::ones({1024});
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
        world.all->allReduceSum(tensor)->wait();
        tensor.fill_(1.0);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw CheckFailed("rank " + std::to_string(failingRank) + " stopped but no collective failed");
}

void timeAllReduce(World& world)
{
    auto tensor = torch::ones({4 * 1024 * 1024}); // 16 MiB of fp32
    std::vector<double> milliseconds;
    for (int iteration = 0; iteration < 23; ++iteration) {
        const auto start = std::chrono::steady_clock::now();
        world.all->allReduceSum(tensor)->wait();
        const std::chrono::duration<double, std::milli> took =
            std::chrono::steady_clock::now() - start;
        if (iteration >= 3)
            milliseconds.push_back(took.count());
    }
    std::sort(milliseconds.begin(), milliseconds.end());
    if (world.environment.rank == 0)
        std::printf("all-reduce of 16 MiB fp32 over %d ranks: median %.1f ms, best %.1f ms\n",
            world.all->size(), milliseconds[milliseconds.size() / 2], milliseconds.front());
}

double numberAfter(int argc, char** argv, const char* flag, double fallback)
{
    for (int index = 1; index + 1 < argc; ++index) {
        if (std::strcmp(argv[index], flag) == 0)
            return std::stod(argv[index + 1]);
    }
    return fallback;
}

// A listening TCP socket: its local address as /proc/net/tcp and tcp6 write
// it (hex, in network byte order word by word) and its port.
struct Listener {
    std::string address;
    int port = 0;
};

// The socket inodes this process holds open (/proc/self/fd links
// "socket:[N]"): other processes' listeners on the machine are not ours.
std::set<std::string> ownSocketInodes()
{
    std::set<std::string> inodes;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code error;
        const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
        if (!error && target.starts_with("socket:[") && target.ends_with("]"))
            inodes.insert(target.substr(8, target.size() - 9));
    }
    return inodes;
}

std::vector<Listener> ownListeners()
{
    const std::set<std::string> inodes = ownSocketInodes();
    std::vector<Listener> found;
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string line;
        std::getline(in, line); // the header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid
                >> timeout >> inode;
            const size_t colon = local.rfind(':');
            if (state == "0A" && colon != std::string::npos && inodes.contains(inode))
                found.push_back(
                    {local.substr(0, colon), std::stoi(local.substr(colon + 1), nullptr, 16)});
        }
    }
    return found;
}

bool isLoopbackHex(const std::string& address)
{
    return address == "0100007F" || address == "00000000000000000000000001000000";
}

bool isWildcardHex(const std::string& address)
{
    return address.find_first_not_of('0') == std::string::npos;
}

// An IPv4 address as /proc/net/tcp writes it: the 32-bit word in memory
// order, in hex ("127.0.0.1" is 0100007F on a little-endian machine).
std::string procHexOf(const std::string& address)
{
    in_addr parsed{};
    if (::inet_pton(AF_INET, address.c_str(), &parsed) != 1)
        return {};
    char text[9];
    std::snprintf(text, sizeof text, "%08X", parsed.s_addr);
    return text;
}

// Rank 0 serves the store on MASTER_ADDR and no other rank serves it; every
// rank has Gloo's listener. A job on one machine (MASTER_ADDR the loopback)
// listens on the loopback only; a job across machines on the address each
// rank reaches the others from, never on every interface (neither the store
// nor Gloo is authenticated).
void checkListeners(const tb::dist::RankEnvironment& environment)
{
    const std::vector<Listener> listeners = ownListeners();
    const bool servesStore = std::any_of(listeners.begin(), listeners.end(),
        [&](const Listener& l) { return l.port == environment.masterPort; });
    check(servesStore == (environment.rank == 0),
        environment.rank == 0
            ? "rank 0 does not listen on MASTER_PORT " + std::to_string(environment.masterPort)
            : "a rank other than 0 listens on MASTER_PORT");
    const bool servesGloo = std::any_of(listeners.begin(), listeners.end(),
        [&](const Listener& l) { return l.port != environment.masterPort; });
    check(servesGloo, "no Gloo listener found among this rank's sockets");
    const std::string masterHex = procHexOf(environment.masterAddr);
    const bool oneMachine = isLoopbackHex(masterHex);
    for (const Listener& listener : listeners) {
        const std::string where = "port " + std::to_string(listener.port) + " listens on "
            + listener.address + " (hex, /proc/net/tcp)";
        if (oneMachine)
            check(isLoopbackHex(listener.address), where + ", not on the loopback only");
        else if (listener.port == environment.masterPort)
            check(listener.address == masterHex,
                where + ", not on MASTER_ADDR " + environment.masterAddr + " only");
        else
            check(!isWildcardHex(listener.address) && !isLoopbackHex(listener.address),
                where + ", not on the one address this rank reaches the others from");
    }
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr,
            "usage: dist_worker collectives|die-after-rendezvous|freeze-after-rendezvous|"
            "slow-arrival|"
            "rendezvous-only|time-allreduce|listeners [--timeout S] [--heartbeat S] "
            "[--dying-rank R] [--late-rank R --delay S]\n");
        return 2;
    }
    const std::string scenario = argv[1];
    auto environment = tb::dist::readRankEnvironment();
    if (!environment) {
        std::fprintf(stderr, "%s\n", environment.error().toString().c_str());
        return 2;
    }
    g_rank = environment->rank;
    tb::dist::RendezvousOptions options;
    options.timeoutSeconds = numberAfter(argc, argv, "--timeout", 60.0);
    options.heartbeatSeconds = numberAfter(argc, argv, "--heartbeat", 1.0);
    if (scenario == "slow-arrival"
        && static_cast<int>(numberAfter(argc, argv, "--late-rank", 0)) == g_rank)
        std::this_thread::sleep_for(std::chrono::milliseconds(
            static_cast<int>(1000 * numberAfter(argc, argv, "--delay", 2))));

    // Timed here, not from outside: starting a process (LibTorch under a
    // sanitizer, on a loaded machine) takes seconds that are not the
    // rendezvous's.
    const auto rendezvousStart = std::chrono::steady_clock::now();
    auto world = tb::dist::rendezvous(*environment, options);
    if (!world) {
        const std::chrono::duration<double> waited =
            std::chrono::steady_clock::now() - rendezvousStart;
        std::fprintf(stderr, "rank %d: %s\nrank %d: gave up %.2f s into the rendezvous\n", g_rank,
            world.error().toString().c_str(), g_rank, waited.count());
        return 2;
    }
    try {
        if (scenario == "collectives" || scenario == "slow-arrival")
            runCollectives(world.value());
        else if (scenario == "die-after-rendezvous" || scenario == "freeze-after-rendezvous")
            runUntilFailure(world.value(),
                static_cast<int>(numberAfter(argc, argv, "--dying-rank", 1)),
                scenario == "die-after-rendezvous" ? SIGKILL : SIGSTOP);
        else if (scenario == "time-allreduce")
            timeAllReduce(world.value());
        else if (scenario == "listeners")
            checkListeners(*environment);
        else if (scenario != "rendezvous-only") {
            std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
            return 2;
        }
    } catch (const CheckFailed& failure) {
        std::fprintf(stderr, "rank %d: check failed: %s\n", g_rank, failure.what());
        return 1;
    } catch (const tb::dist::CommunicationError& error) {
        std::fprintf(stderr, "rank %d: %s\n", g_rank, error.what());
        return 3;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "rank %d: unexpected exception: %s\n", g_rank, error.what());
        return 4;
    }
    return 0;
}
