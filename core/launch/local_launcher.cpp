#include "launch/local_launcher.h"

#include "common/units.h"

#include "common/text.h"
#include "launch/child_process.h"
#include "launch/free_port.h"
#include "launch/line_splitter.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <memory>
#include <poll.h>
#include <sched.h>
#include <thread>
#include <unistd.h>

namespace tb::launch {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPollMilliseconds = 20; // how soon a cancel request or an exit is noticed
constexpr size_t kReadBytes = size_t{64} << 10;

struct Rank {
    RankReport report;
    std::unique_ptr<ChildProcess> process;
    LineSplitter stdoutLines;
    LineSplitter stderrLines;
    std::optional<Clock::time_point> exitedAt;
};

double secondsBetween(Clock::time_point from, Clock::time_point to)
{
    return std::chrono::duration<double>(to - from).count();
}

Clock::duration toDuration(double seconds)
{
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::max(0.0, seconds)));
}

class Supervisor {
public:
    Supervisor(const LaunchOptions& options, LaunchSink& sink, const CancelToken& cancel)
        : m_options(options)
        , m_sink(sink)
        , m_cancel(cancel)
    {
    }

    common::Status start(int masterPort);
    LaunchReport run();

private:
    void emitLine(Rank& rank, OutputStream stream, std::string_view line);
    void readPipes(int timeoutMs);
    void closeStream(Rank& rank, OutputStream stream);
    void reap();
    void beginStop(int signal, const std::string& reason);
    bool allDone() const;

    const LaunchOptions& m_options;
    LaunchSink& m_sink;
    const CancelToken& m_cancel;
    std::vector<Rank> m_ranks;
    LaunchReport m_report;
    std::optional<Clock::time_point> m_stopAt;
    bool m_killed = false;
    bool m_forceKill = false;
    int m_cancelRequestsSeen = 0;
};

common::Status Supervisor::start(int masterPort)
{
    m_report.masterPort = masterPort;
    WorldLayout layout = m_options.layout;
    layout.masterPort = masterPort;
    std::vector<std::string> base =
        m_options.environment.empty() ? currentEnvironment() : m_options.environment;
    if (m_options.shareCpuThreads) {
        m_report.ompThreadsPerRank = sharedOmpThreads(base, layout.nprocPerNode);
        if (m_report.ompThreadsPerRank > 0)
            base.push_back("OMP_NUM_THREADS=" + std::to_string(m_report.ompThreadsPerRank));
    }
    m_ranks.resize(size_t(layout.nprocPerNode));
    for (int local = 0; local < layout.nprocPerNode; ++local) {
        Rank& rank = m_ranks[size_t(local)];
        rank.report.rank = layout.globalRank(local);
        rank.report.localRank = local;
        auto child = ChildProcess::spawn({m_options.program, m_options.arguments,
            mergeEnvironment(base, rankEnvironment(layout, local))});
        if (!child)
            return child.error(); // ~Rank kills and reaps the ranks already started
        rank.process = std::move(child).value();
        rank.report.pid = rank.process->pid();
        m_sink.rankStarted(rank.report.rank, rank.report.pid);
    }
    return common::Ok{};
}

void Supervisor::emitLine(Rank& rank, OutputStream stream, std::string_view line)
{
    if (stream == OutputStream::Stderr) {
        const std::string trimmed = common::trim(line);
        if (!trimmed.empty())
            rank.report.lastStderrLine = trimmed;
    }
    m_sink.rankOutput(rank.report.rank, stream, line);
}

void Supervisor::closeStream(Rank& rank, OutputStream stream)
{
    LineSplitter& lines = stream == OutputStream::Stdout ? rank.stdoutLines : rank.stderrLines;
    lines.finish([&](std::string_view line) { emitLine(rank, stream, line); });
    if (stream == OutputStream::Stdout)
        rank.process->closeStdout();
    else
        rank.process->closeStderr();
}

void Supervisor::readPipes(int timeoutMs)
{
    struct Source {
        Rank* rank;
        OutputStream stream;
    };
    std::vector<pollfd> fds;
    std::vector<Source> sources;
    for (Rank& rank : m_ranks) {
        if (rank.process->stdoutFd() >= 0) {
            fds.push_back({rank.process->stdoutFd(), POLLIN, 0});
            sources.push_back({&rank, OutputStream::Stdout});
        }
        if (rank.process->stderrFd() >= 0) {
            fds.push_back({rank.process->stderrFd(), POLLIN, 0});
            sources.push_back({&rank, OutputStream::Stderr});
        }
    }
    const int ready = poll(fds.data(), nfds_t(fds.size()), timeoutMs);
    if (ready <= 0)
        return; // timeout, or EINTR from a signal: the loop looks at the token next
    char buffer[kReadBytes];
    for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0)
            continue;
        Rank& rank = *sources[i].rank;
        const OutputStream stream = sources[i].stream;
        const ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
        if (got > 0) {
            LineSplitter& lines =
                stream == OutputStream::Stdout ? rank.stdoutLines : rank.stderrLines;
            lines.append(std::string_view(buffer, size_t(got)),
                [&](std::string_view line) { emitLine(rank, stream, line); });
        } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
            closeStream(rank, stream);
        }
    }
}

void Supervisor::reap()
{
    const Clock::time_point now = Clock::now();
    for (Rank& rank : m_ranks) {
        if (!rank.process->isRunning()) {
            // Still draining? Give up on pipes held open by the rank's own children.
            if (rank.exitedAt && secondsBetween(*rank.exitedAt, now) > m_options.drainSeconds) {
                if (rank.process->stdoutFd() >= 0)
                    closeStream(rank, OutputStream::Stdout);
                if (rank.process->stderrFd() >= 0)
                    closeStream(rank, OutputStream::Stderr);
            }
            continue;
        }
        const std::optional<ExitStatus> status = rank.process->tryReap();
        if (!status)
            continue;
        rank.exitedAt = now;
        rank.report.status = *status;
        m_sink.rankExited(rank.report.rank, *status);
        if (!status->isSuccess() && !m_stopAt) {
            m_report.outcome = LaunchOutcome::RankFailed;
            m_report.failedRank = rank.report.rank;
            beginStop(SIGTERM,
                "rank " + std::to_string(rank.report.rank) + " failed (" + status->toString()
                    + ")");
        }
    }
}

void Supervisor::beginStop(int signal, const std::string& reason)
{
    m_stopAt = Clock::now();
    m_report.stopSignal = signal;
    m_sink.stopping(reason);
    for (Rank& rank : m_ranks)
        rank.process->signalGroup(signal);
}

bool Supervisor::allDone() const
{
    return std::all_of(m_ranks.begin(), m_ranks.end(), [](const Rank& rank) {
        return !rank.process->isRunning() && rank.process->stdoutFd() < 0
            && rank.process->stderrFd() < 0;
    });
}

LaunchReport Supervisor::run()
{
    const Clock::duration grace = toDuration(m_options.graceSeconds);
    std::optional<Clock::time_point> lastExit;
    while (!allDone()) {
        const int requests = m_cancel.requestCount();
        if (requests > m_cancelRequestsSeen) {
            m_cancelRequestsSeen = requests;
            if (!m_stopAt) {
                m_report.outcome = LaunchOutcome::Cancelled;
                beginStop(m_cancel.signal(),
                    "stop requested (" + signalName(m_cancel.signal())
                        + "): forwarded to every rank");
            } else if (requests >= 2) {
                m_forceKill = true; // a second request: no more grace
            }
        }
        if (m_stopAt && !m_killed && (m_forceKill || Clock::now() - *m_stopAt >= grace)) {
            m_killed = true;
            for (Rank& rank : m_ranks) {
                if (rank.process->signalGroup(SIGKILL))
                    rank.report.killedAfterGrace = true;
            }
        }
        readPipes(kPollMilliseconds);
        reap();
        for (const Rank& rank : m_ranks) {
            if (rank.exitedAt && (!lastExit || *rank.exitedAt > *lastExit))
                lastExit = rank.exitedAt;
        }
    }
    if (m_stopAt && lastExit)
        m_report.stopSeconds = std::max(0.0, secondsBetween(*m_stopAt, *lastExit));
    for (Rank& rank : m_ranks)
        m_report.ranks.push_back(rank.report);
    return m_report;
}

} // namespace

int usableCpuCount()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return std::max(1, int(std::thread::hardware_concurrency()));
}

int sharedOmpThreads(const std::vector<std::string>& environment, int nprocPerNode)
{
    const bool isSet = std::any_of(environment.begin(), environment.end(),
        [](const std::string& e) { return e.rfind("OMP_NUM_THREADS=", 0) == 0; });
    if (isSet || nprocPerNode <= 1)
        return 0;
    return std::max(1, usableCpuCount() / nprocPerNode);
}

common::Result<int> rankComputeThreads(
    const std::optional<std::string>& ompNumThreads, int usableCpus, int localWorldSize)
{
    if (!ompNumThreads)
        return std::max(1, usableCpus / std::max(1, localWorldSize));
    const std::string first = ompNumThreads->substr(0, ompNumThreads->find(','));
    int threads = 0;
    const auto [end, error] = std::from_chars(first.data(), first.data() + first.size(), threads);
    if (error != std::errc() || end != first.data() + first.size() || threads < 1)
        return common::Error{"OMP_NUM_THREADS: got '" + *ompNumThreads
                + "', expected a positive whole number of threads",
            "unset it, or pass --threads N"};
    return threads;
}

const RankReport* LaunchReport::failed() const
{
    for (const RankReport& rank : ranks) {
        if (rank.rank == failedRank)
            return &rank;
    }
    return nullptr;
}

int LaunchReport::killedCount() const
{
    return int(std::count_if(
        ranks.begin(), ranks.end(), [](const RankReport& rank) { return rank.killedAfterGrace; }));
}

std::string LaunchReport::summary() const
{
    const int total = int(ranks.size());
    std::string text;
    switch (outcome) {
    case LaunchOutcome::Succeeded:
        return "all " + std::to_string(total) + " ranks finished";
    case LaunchOutcome::RankFailed: {
        const RankReport* rank = failed();
        text = "rank " + std::to_string(failedRank) + " failed with "
            + (rank && rank->status ? rank->status->toString() : std::string("an unknown status"));
        text += rank && !rank->lastStderrLine.empty()
            ? "; its last error: \"" + rank->lastStderrLine + "\""
            : std::string("; it wrote nothing to stderr");
        if (total > 1)
            text += "; the other " + std::to_string(total - 1) + " rank(s) ended";
        break;
    }
    case LaunchOutcome::Cancelled:
        text = "stopped by " + signalName(stopSignal) + "; all " + std::to_string(total)
            + " rank(s) ended";
        break;
    }
    text += " in " + common::formatFixed(stopSeconds, 3) + " s";
    if (const int killed = killedCount(); killed > 0) {
        text += " (" + std::to_string(killed) + " killed with SIGKILL after ignoring "
            + signalName(stopSignal) + ":";
        for (const RankReport& rank : ranks) {
            if (rank.killedAfterGrace)
                text += " rank " + std::to_string(rank.rank);
        }
        text += ")";
    }
    return text;
}

common::Result<LaunchReport> runLocalLaunch(
    const LaunchOptions& options, LaunchSink& sink, const CancelToken& cancel)
{
    if (common::Status valid = validateLayout(options.layout); !valid)
        return valid.error();
    if (options.program.empty())
        return common::Error{"program: empty, expected the trainer executable", {}};
    if (!std::isfinite(options.graceSeconds) || options.graceSeconds < 0)
        return common::Error{"grace: expected a number of seconds >= 0", {}};
    int port = options.layout.masterPort;
    if (port == 0) {
        common::Result<int> picked = pickFreePort(options.layout.masterAddr);
        if (!picked)
            return picked.error();
        port = *picked;
    }
    LaunchOptions launched = options;
    if (launched.layout.runId.empty() && launched.layout.nnodes == 1)
        launched.layout.runId = newRunId();
    Supervisor supervisor(launched, sink, cancel);
    if (common::Status started = supervisor.start(port); !started)
        return started.error();
    return supervisor.run();
}

} // namespace tb::launch
