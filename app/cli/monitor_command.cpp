// tunebench-cli monitor: follow a run's event stream from its folder, here or
// on another machine over SSH, print it as it grows, and stop the run.
#include "arg_parser.h"
#include "commands.h"
#include "event_lines.h"
#include "this_executable.h"

#include "common/text.h"
#include "common/units.h"
#include "launch/run_registry.h"
#include "metrics/event_file_reader.h"
#include "metrics/run_control.h"
#include "metrics/run_history.h"

#ifdef TB_HAVE_SSH
#include "remote/remote_registry.h"
#include "remote/remote_run_control.h"
#include "remote/sftp_event_source.h"
#include "remote/ssh_session.h"
#include "ssh_options.h"
#endif

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <limits.h>
#include <limits>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace tb::cli {

namespace {

using common::Error;

std::atomic<bool> g_detach{false};

void onDetachSignal(int)
{
    g_detach = true;
}

ArgParser monitorParser()
{
    ArgParser p("monitor",
        "Follow a run from its folder: every step, evaluation, warning and error as the run "
        "writes them to events.jsonl (rank 0's stream), until the run ends. With --host the "
        "folder is on another machine, read over SSH (SFTP). Ctrl-C detaches; the run goes on.");
    p.addPositional("RUN_DIR",
        "the run folder (output.dir of its run config); without it and --run,\n"
        "list the runs in the machine's run registry");
    p.addOption("run", "ID",
        "the run with this id in the machine's run registry (launch --detach, --hostfile)");
    p.addOption("from-offset", "BYTES",
        "start reading events.jsonl here (what an earlier follower printed)");
    p.addOption("from-line", "N", "the line number at --from-offset (default 1)");
    p.addOption("remote-cli", "PATH",
        "tunebench-cli on the host, for --run and the registry "
        "(default: this executable's path)");
#ifdef TB_HAVE_SSH
    addSshOptions(p, "the machine the run is on (default: this one)");
#else
    p.addOption("host", "[USER@]HOST", "the machine the run is on (this build has no SSH)");
#endif
    p.addOption("poll", "SECONDS", "how often to read the file (default 1)");
    p.addFlag("once", "print what the run has written so far, then exit");
    p.addFlag("stop",
        "ask the run to stop (SIGTERM to rank 0: it checkpoints and ends 'stopped'), "
        "then follow it to its end");
    p.setEpilog(
        "Exit status: 0 the run completed or stopped (or --once), 1 it failed or could not\n"
        "be stopped, 2 bad input or no connection, 130 detached with Ctrl-C.");
    return p;
}

// Reads what is new, prints it, folds it into `history`: a batch at a time
// (EventFileReader::kBytesPerBatch), so a long backlog, or a file that is not
// an event stream at all, is never held whole.
common::Status readNew(metrics::EventFileReader& reader, metrics::RunHistory& history)
{
    do {
        common::Result<std::vector<metrics::StreamItem>> items = reader.poll();
        if (!items)
            return items.error();
        for (const metrics::StreamItem& item : *items) {
            if (!item.event) {
                history.addUnreadableLine(item.error);
                std::printf("unreadable %s\n", common::escapeControl(item.error).c_str());
                continue;
            }
            history.apply(*item.event);
            printEvent(*item.event, history);
        }
        std::fflush(stdout);
    } while (reader.moreAvailable() && !g_detach);
    return common::Ok{};
}

// Where the run is: this machine's file system, or a session to another.
struct Connection {
#ifdef TB_HAVE_SSH
    std::unique_ptr<remote::SshSession> session;
#endif
    std::unique_ptr<metrics::EventFileReader> reader;

    common::Result<long long> stop(const metrics::RunHistory& history)
    {
#ifdef TB_HAVE_SSH
        if (session)
            return remote::stopRemoteRun(*session, history);
#endif
        return metrics::stopLocalTrainer(history);
    }
};

common::Result<Connection> connect(const ArgParser& p)
{
    Connection connection;
    if (!p.isSet("host")) {
        for (const char* remoteOnly :
            {"port", "identity", "known-hosts", "ssh-timeout", "remote-cli"}) {
            if (p.isSet(remoteOnly))
                return Error{std::string("monitor: --") + remoteOnly + " needs --host", {}};
        }
        return connection;
    }
#ifdef TB_HAVE_SSH
    common::Result<std::unique_ptr<remote::SshSession>> session = connectWithOptions(p, "monitor");
    if (!session)
        return session.error();
    connection.session = std::move(session).value();
    return connection;
#else
    return Error{"monitor: --host: this build has no SSH (TUNEBENCH_SSH off)", {}};
#endif
}

// The registry of the machine the connection is to, entries of `runId` only
// when it is not empty.
common::Result<std::vector<launch::RegistryEntry>> registryOf(
    Connection& connection, const ArgParser& p, const std::string& runId)
{
#ifdef TB_HAVE_SSH
    if (connection.session)
        return remote::remoteRegistry(
            *connection.session, p.value("remote-cli", thisExecutable()), runId);
#else
    (void)connection, (void)p;
#endif
    common::Result<std::vector<launch::RegistryEntry>> all = launch::listLocalRegistry();
    if (!all)
        return all.error();
    std::vector<launch::RegistryEntry> entries;
    for (launch::RegistryEntry& entry : all.value()) {
        if (runId.empty() || entry.runId == runId)
            entries.push_back(std::move(entry));
    }
    return entries;
}

int printRegistry(const std::vector<launch::RegistryEntry>& entries)
{
    if (entries.empty()) {
        std::printf("no runs in the registry\n");
        return kExitOk;
    }
    std::printf(
        "%-14s %-5s %-18s %-8s %-21s %s\n", "RUN", "NODE", "STATE", "PID", "STARTED", "FOLDER");
    for (const launch::RegistryEntry& e : entries) {
        const std::string state = e.stateText();
        std::printf("%-14s %d/%-3d %-18s %-8lld %-21s %s\n", common::escapeControl(e.runId).c_str(),
            e.nodeRank, e.nnodes, state.c_str(), e.pid, common::escapeControl(e.startedAt).c_str(),
            common::escapeControl(e.runDir).c_str());
    }
    return kExitOk;
}

// The folder of run `runId`: node 0's entry (rank 0 writes the events).
common::Result<std::string> runDirOf(
    Connection& connection, const ArgParser& p, const std::string& runId)
{
    common::Result<std::vector<launch::RegistryEntry>> entries = registryOf(connection, p, runId);
    if (!entries)
        return entries.error();
    for (const launch::RegistryEntry& entry : *entries) {
        if (entry.nodeRank == 0)
            return entry.runDir;
    }
    return Error{"monitor: --run: no run '" + runId + "' with node 0 in the registry there",
        "'tunebench-cli monitor --host HOST' lists the runs there"};
}

std::unique_ptr<metrics::EventFileReader> openEvents(
    Connection& connection, const std::string& events, uint64_t offset, uint64_t line)
{
#ifdef TB_HAVE_SSH
    if (connection.session)
        return std::make_unique<metrics::EventFileReader>(
            remote::sftpEventSource(*connection.session, events), offset, line);
#else
    (void)connection;
#endif
    return std::make_unique<metrics::EventFileReader>(events, offset, line);
}

// A follower that goes on from an offset has not seen the run's run_start,
// the file's first line: read it from the top, unprinted, so step lines show
// the total and --stop knows rank 0's process.
common::Status readRunStart(
    Connection& connection, const std::string& events, metrics::RunHistory& history)
{
    constexpr uint64_t kFirstLinesBytes = 64 * 1024;
    common::Result<std::vector<metrics::StreamItem>> items =
        openEvents(connection, events, 0, 1)->poll(kFirstLinesBytes);
    if (!items)
        return items.error();
    for (const metrics::StreamItem& item : *items) {
        if (item.event && item.event->type == metrics::EventType::RunStart) {
            history.apply(*item.event);
            break;
        }
    }
    return common::Ok{};
}

common::Status openReader(Connection& connection, const ArgParser& p, const std::string& runDir,
    metrics::RunHistory& history)
{
    const common::Result<long long> offset =
        p.integer("from-offset", 0, 0, std::numeric_limits<long long>::max());
    const common::Result<long long> line =
        p.integer("from-line", 1, 1, std::numeric_limits<long long>::max());
    if (!offset || !line)
        return !offset ? offset.error() : line.error();
    const std::string events = runDir + "/events.jsonl";
    if (*offset > 0) {
        if (common::Status started = readRunStart(connection, events, history); !started)
            return started;
    }
    connection.reader = openEvents(connection, events, uint64_t(*offset), uint64_t(*line));
    return common::Ok{};
}

// How to follow on from where this reader stopped, no event lost or doubled.
std::string resumeHint(const metrics::EventFileReader& reader)
{
    return "tunebench-cli monitor: to go on from here, add --from-offset "
        + std::to_string(reader.offset()) + " --from-line "
        + std::to_string(reader.nextLineNumber());
}

int exitStatusOf(const metrics::RunHistory& history)
{
    const std::string& status = history.end()->status;
    return status == "completed" || status == "stopped" ? kExitOk : kExitFailure;
}

} // namespace

int runMonitor(const Args& args)
{
    ArgParser p = monitorParser();
    if (const std::optional<int> status = p.parseOrExitStatus(args))
        return *status;
    if (p.positionals().size() > 1 || (p.positionals().size() == 1 && p.isSet("run"))) {
        std::cerr
            << "monitor: expected one run folder or --run ID (see tunebench-cli monitor --help)\n";
        return kExitUsage;
    }
    const common::Result<double> poll = p.number("poll", 1.0, 0.05, 3600.0);
    if (!poll) {
        std::cerr << poll.error().toString() << "\n";
        return kExitUsage;
    }
    common::Result<Connection> connected = connect(p);
    if (!connected) {
        std::cerr << "tunebench-cli monitor: " << connected.error().toString() << "\n";
        return kExitUsage;
    }
    Connection connection = std::move(connected).value();
    if (p.positionals().empty() && !p.isSet("run")) {
        common::Result<std::vector<launch::RegistryEntry>> entries = registryOf(connection, p, {});
        if (!entries) {
            std::cerr << "tunebench-cli monitor: " << entries.error().toString() << "\n";
            return kExitUsage;
        }
        return printRegistry(*entries);
    }
    const common::Result<std::string> runDir = p.isSet("run")
        ? runDirOf(connection, p, p.value("run"))
        : common::Result<std::string>(p.positionals()[0]);
    metrics::RunHistory history;
    common::Status opened =
        runDir ? openReader(connection, p, *runDir, history) : common::Status(runDir.error());
    if (!opened) {
        std::cerr << "tunebench-cli monitor: " << opened.error().toString() << "\n";
        return kExitUsage;
    }

    g_detach = false;
    struct sigaction action { };
    action.sa_handler = onDetachSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);

    bool stopSent = false;
    bool saidWaiting = false;
    const auto interval = std::chrono::milliseconds(static_cast<long long>(*poll * 1000));
    for (;;) {
        if (common::Status read = readNew(*connection.reader, history); !read) {
            std::cerr << "tunebench-cli monitor: " << read.error().toString() << "\n"
                      << resumeHint(*connection.reader) << "\n";
            return kExitFailure;
        }
        if (p.isSet("stop") && !stopSent && history.start() && !history.end()) {
            const common::Result<long long> pid = connection.stop(history);
            if (!pid) {
                std::cerr << "tunebench-cli monitor: --stop: " << pid.error().toString() << "\n";
                return kExitFailure;
            }
            std::printf("stop       SIGTERM sent to process %lld on %s\n", *pid,
                history.start()->host.c_str());
            std::fflush(stdout);
            stopSent = true;
        }
        if (p.isSet("once")) {
            if (!history.start())
                std::printf("no run_start in %s yet\n", connection.reader->path().c_str());
            return kExitOk;
        }
        if (history.end()) {
            if (p.isSet("stop") && !stopSent)
                std::fprintf(stderr,
                    "tunebench-cli monitor: --stop: nothing to stop, the run had "
                    "already ended (%s)\n",
                    history.end()->status.c_str());
            return exitStatusOf(history);
        }
        if (!history.start() && !saidWaiting) {
            std::fprintf(stderr, "tunebench-cli monitor: waiting for a run_start in %s\n",
                connection.reader->path().c_str());
            saidWaiting = true;
        }
        // Sleep in short slices so Ctrl-C detaches at once.
        for (auto slept = std::chrono::milliseconds(0); slept < interval && !g_detach;
             slept += std::chrono::milliseconds(50))
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (g_detach) {
            std::fprintf(stderr, "tunebench-cli monitor: detached; the run goes on\n%s\n",
                resumeHint(*connection.reader).c_str());
            return 130;
        }
    }
}

} // namespace tb::cli
