#pragma once

#include "common/error.h"
#include "launch/cancel_token.h"
#include "launch/exit_status.h"
#include "launch/world_layout.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::launch {

// Starts this node's ranks of a job the way torchrun --nproc_per_node does
// and supervises them until they have all ended (docs/LAUNCH.md).
struct LaunchOptions {
    std::string program; // the trainer executable
    std::vector<std::string> arguments; // its arguments ("train", "run.yaml", ...)
    WorldLayout layout; // masterPort 0: a free port is picked on masterAddr
    // The ranks' environment before the rank variables are added; empty: ours.
    std::vector<std::string> environment;
    // After a failure or a stop request, how long ranks get to exit on the
    // forwarded signal before they are killed.
    double graceSeconds = 10.0;
    // How long a rank's pipes are still read after it exited (a process it
    // started may hold them open).
    double drainSeconds = 0.5;
    // With several ranks and no OMP_NUM_THREADS in the environment, give each
    // rank an equal share of this process's CPUs, so N ranks do not each start
    // a thread per core (torchrun sets 1 in that case).
    bool shareCpuThreads = true;
};

enum class OutputStream { Stdout, Stderr };

// What the launcher reports while it runs, from the thread that called
// runLocalLaunch(). Lines come whole, without their newline.
class LaunchSink {
public:
    virtual ~LaunchSink() = default;
    virtual void rankStarted(int rank, int pid) { (void)rank, (void)pid; }
    virtual void rankOutput(int rank, OutputStream stream, std::string_view line) = 0;
    virtual void rankExited(int rank, const ExitStatus& status) { (void)rank, (void)status; }
    // The launcher began ending every rank, and why.
    virtual void stopping(std::string_view reason) { (void)reason; }
};

struct [[nodiscard]] RankReport {
    int rank = 0;
    int localRank = 0;
    int pid = 0;
    std::optional<ExitStatus> status;
    std::string lastStderrLine; // the last non-blank line the rank wrote to stderr
    bool killedAfterGrace = false; // ignored the forwarded signal for graceSeconds
};

enum class LaunchOutcome {
    Succeeded, // every rank exited with status 0
    RankFailed, // a rank failed; the others were ended
    Cancelled, // the token asked to stop; the signal was forwarded
};

struct [[nodiscard]] LaunchReport {
    LaunchOutcome outcome = LaunchOutcome::Succeeded;
    int masterPort = 0; // the port the ranks were given
    int ompThreadsPerRank = 0; // OMP_NUM_THREADS we set for each rank; 0: left as it was
    std::vector<RankReport> ranks; // by local rank
    int failedRank = -1; // global rank of the first rank that failed
    int stopSignal = 0; // the signal sent to the ranks when stopping
    // From the decision to stop (failure or request) to the last rank reaped.
    double stopSeconds = 0;

    const RankReport* failed() const;
    int killedCount() const;
    // One line for a person: what failed, how, its last error, what happened to the rest.
    std::string summary() const;
};

// CPUs this process may run on (its affinity mask), at least 1.
int usableCpuCount();

// The OMP_NUM_THREADS the launcher gives each of `nprocPerNode` ranks when
// the environment has none (usableCpuCount() / nprocPerNode, at least 1), or
// 0 when it leaves the variable alone (already set, or a single rank).
int sharedOmpThreads(const std::vector<std::string>& environment, int nprocPerNode);

// The intra-op threads of a rank given no --threads: the OMP_NUM_THREADS its
// launcher set (torchrun, srun, ours; the first number of a nested list),
// else its share of the CPUs it may use (usableCpus / localWorldSize, at
// least 1), so that the ranks of a node do not each run a thread per core.
// An OMP_NUM_THREADS that is not a positive whole number is an Error naming
// it and its value.
common::Result<int> rankComputeThreads(
    const std::optional<std::string>& ompNumThreads, int usableCpus, int localWorldSize);

// Runs the ranks to the end. Errors only for what prevents a launch (a bad
// layout, no free port, a program that cannot be executed: ranks already
// started are then killed and reaped); a rank's failure is a LaunchReport.
// Single-threaded: one poll() loop reads every pipe and reaps every child.
common::Result<LaunchReport> runLocalLaunch(
    const LaunchOptions& options, LaunchSink& sink, const CancelToken& cancel);

} // namespace tb::launch
