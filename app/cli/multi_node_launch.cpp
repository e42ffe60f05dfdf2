#include "multi_node_launch.h"

#include "commands.h"
#include "event_lines.h"
#include "this_executable.h"

#ifdef TB_HAVE_SSH
#include "common/units.h"
#include "launch/cancel_token.h"
#include "launch/hostfile.h"
#include "launch/text_quote.h"
#include "launch/world_layout.h"
#include "remote/cluster_launch.h"
#include "remote/launcher_status.h"

#include <mutex>
#endif

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits.h>
#include <unistd.h>

namespace tb::cli {

void addMultiNodeOptions(ArgParser& p)
{
    p.addOption("hostfile", "FILE",
        "start the run on the machines FILE names, over SSH (DeepSpeed's format: 'HOST slots=N'\n"
        "a line, HOST as [user@]host[:port]); every node is checked first");
    p.addOption("include", "HOSTS", "only these hosts or slots of the hostfile: 'host1@host2:0,1'");
    p.addOption("exclude", "HOSTS", "every host or slot of the hostfile but these");
    p.addOption(
        "ssh-key", "FILE", "private key for the nodes (default: ~/.ssh/config, ssh-agent, ~/.ssh)");
    p.addOption("known-hosts", "FILE",
        "known hosts file (default ~/.ssh/known_hosts); unknown keys are refused");
    p.addOption(
        "remote-cli", "PATH", "tunebench-cli on the nodes (default: this executable's path)");
    p.addOption("ssh-timeout", "SECONDS",
        "with --hostfile: how long connecting, each command and each SFTP call may wait for an\n"
        "answer (default 15; a checksum gets this plus its file's size at 50 MB/s)");
    p.addFlag("preflight-only", "with --hostfile: check every node, start nothing");
    p.addOption("stop", "RUN_ID",
        "with --hostfile: stop that run on every node gracefully (checkpoint first)\n"
        "and follow it to its end");
    p.addOption("attach", "RUN_ID",
        "with --hostfile: follow that run again (node states, rank 0's events)");
    p.addFlag("status-json",
        "with --hostfile: node states, transfers, notes and the end as JSON lines on\n"
        "stdout for programs (docs/EVENTS.md); rank 0's events are then not printed");
    p.addFlag("sync",
        "with --hostfile: copy the run config, model and data to every node over SFTP\n"
        "first (same paths; files already equal are skipped, an interrupted copy goes on)");
}

std::string multiNodeOptionWithoutHostfile(const ArgParser& p)
{
    for (const char* option : {"include", "exclude", "ssh-key", "known-hosts", "remote-cli",
             "ssh-timeout", "preflight-only", "stop", "attach", "status-json", "sync"})
        if (p.isSet(option))
            return std::string("launch: --") + option
                + " is for a run on several machines: give --hostfile too";
    return {};
}

#ifdef TB_HAVE_SSH

namespace {

launch::CancelToken* g_clusterCancel = nullptr;
launch::CancelToken* g_clusterDetach = nullptr;

// Ctrl-C and SIGTERM stop the run on every node; SIGHUP (the terminal or
// SSH link of this CLI closed) leaves it running, to be followed again.
extern "C" void onClusterSignal(int signal)
{
    launch::CancelToken* token = signal == SIGHUP ? g_clusterDetach : g_clusterCancel;
    if (token)
        token->cancel(signal);
}

// Lines for people on stderr; with --status-json, the same news as JSON
// lines on stdout for programs (docs/EVENTS.md), and rank 0's events left
// to the program to follow.
class PrintingSink : public remote::ClusterSink {
public:
    explicit PrintingSink(bool statusJson)
        : m_statusJson(statusJson)
    {
    }

    void nodeState(const remote::NodeUpdate& update) override
    {
        std::fprintf(stderr, "node %d %-24s %-11s %s\n", update.node, update.host.c_str(),
            std::string(remote::toString(update.state)).c_str(), update.detail.c_str());
        remote::LauncherStatus status;
        status.type = remote::LauncherStatus::Type::Node;
        status.node = update;
        emit(status);
    }
    void preflightFailed(const std::vector<std::string>& problems) override
    {
        remote::LauncherStatus status;
        status.type = remote::LauncherStatus::Type::PreflightFailed;
        status.problems = problems;
        emit(status);
    }
    void runEvent(const metrics::Event& event, const metrics::RunHistory& history) override
    {
        if (m_statusJson)
            return;
        printEvent(event, history);
        std::fflush(stdout);
    }
    void note(const std::string& line) override
    {
        std::fprintf(stderr, "tunebench-cli launch: %s\n", line.c_str());
        remote::LauncherStatus status;
        status.text = line;
        emit(status);
    }
    void transferProgress(
        int node, const std::string& host, const remote::TransferProgress& p) override
    {
        const double percent = p.bytes ? 100.0 * double(p.bytesDone) / double(p.bytes) : 100.0;
        std::fprintf(stderr, "node %d %-24s sync %5.1f%% of %s  %s\n", node, host.c_str(), percent,
            common::formatBytes(double(p.bytes)).c_str(), p.path.c_str());
        remote::LauncherStatus status;
        status.type = remote::LauncherStatus::Type::Transfer;
        status.transferNode = node;
        status.transferHost = host;
        status.transfer = p;
        emit(status);
    }
    void ended(const remote::ClusterReport& report)
    {
        remote::LauncherStatus status;
        status.type = remote::LauncherStatus::Type::End;
        status.outcome = remote::toString(report.outcome);
        status.runId = report.runId;
        status.text = report.message;
        emit(status);
    }

private:
    // Preflight checks run on a thread per node: one whole line at a time.
    void emit(const remote::LauncherStatus& status)
    {
        if (!m_statusJson)
            return;
        const std::lock_guard lock(m_mutex);
        std::fprintf(stdout, "%s\n", remote::toJsonLine(status).c_str());
        std::fflush(stdout);
    }

    bool m_statusJson = false;
    std::mutex m_mutex;
};

common::Result<remote::ClusterOptions> clusterOptions(
    const ArgParser& p, const std::vector<std::string>& extra)
{
    if (p.positionals().size() != 1)
        return common::Error{"launch: expected one run config (RUN.yaml)", {}};
    if (p.isSet("stop") && p.isSet("attach"))
        return common::Error{"launch: --stop and --attach: give one of them", {}};
    for (const char* oneNode : {"nproc", "nnodes", "node-rank", "detach", "devices", "trainer"}) {
        if (p.isSet(oneNode))
            return common::Error{std::string("launch: --") + oneNode
                    + " is for one node; with --hostfile the hostfile says where ranks run",
                {}};
    }
    // Each names registry files and a remote command's word on every node.
    for (const char* option : {"run-id", "stop", "attach"}) {
        if (!p.isSet(option))
            continue;
        if (common::Status valid = launch::checkRunId(p.value(option)); !valid)
            return common::Error{
                std::string("launch: --") + option + ": " + valid.error().message, {}};
    }
    common::Result<std::vector<launch::HostSlots>> hosts =
        launch::readHostfile(p.value("hostfile"));
    if (!hosts)
        return hosts.error();
    common::Result<std::vector<launch::HostSlots>> kept =
        launch::filterHosts(std::move(hosts).value(), p.value("include"), p.value("exclude"));
    if (!kept)
        return kept.error();
    const common::Result<long long> port = p.integer("master-port", 0, 1, 65535);
    const common::Result<double> grace = p.number("grace", 10.0, 0.0, 3600.0);
    const common::Result<double> timeout =
        p.number("ssh-timeout", remote::ClusterOptions{}.sshTimeoutSeconds, 0.1, 3600.0);
    if (!port || !grace || !timeout)
        return !port ? port.error() : !grace ? grace.error() : timeout.error();
    remote::ClusterOptions options;
    options.configPath = std::filesystem::absolute(p.positionals()[0]).lexically_normal().string();
    options.hosts = std::move(kept).value();
    options.remoteCli = p.value("remote-cli", thisExecutable());
    options.identityFile = p.value("ssh-key");
    options.knownHostsFile = p.value("known-hosts");
    options.masterAddr = p.value("master-addr");
    options.masterPort = int(*port);
    options.runId = p.value("run-id");
    options.graceSeconds = *grace;
    options.sshTimeoutSeconds = *timeout;
    options.trainerArguments = extra;
    options.sync = p.isSet("sync");
    return options;
}

// `monitor`'s --host (and --port) for a hostfile's node, as shell words to
// paste: a host name holding `;` or `$(...)` stays one word.
std::string monitorHost(const launch::HostSlots& host)
{
    std::string text =
        launch::shellQuote(host.user.empty() ? host.host : host.user + "@" + host.host);
    if (host.port > 0)
        text += " --port " + std::to_string(host.port);
    return text;
}

int exitStatusOf(const remote::ClusterReport& report)
{
    switch (report.outcome) {
    case remote::ClusterOutcome::Succeeded:
        return kExitOk;
    case remote::ClusterOutcome::NodeFailed:
        return kExitFailure;
    case remote::ClusterOutcome::Stopped:
        return 130;
    case remote::ClusterOutcome::Detached:
        return kExitOk;
    }
    return kExitFailure;
}

} // namespace

int runMultiNodeLaunch(const ArgParser& p, const std::vector<std::string>& extra)
{
    common::Result<remote::ClusterOptions> options = clusterOptions(p, extra);
    if (!options) {
        std::cerr << "tunebench-cli " << options.error().toString() << "\n";
        return kExitUsage;
    }
    const std::string earlierRun = p.value("stop", p.value("attach"));
    if (!earlierRun.empty())
        options.value().runId = earlierRun;
    remote::ClusterLaunch cluster(std::move(options).value());
    PrintingSink sink(p.isSet("status-json"));
    if (!earlierRun.empty()) {
        if (common::Status attached = cluster.attach(sink); !attached) {
            std::cerr << "tunebench-cli launch: " << attached.error().toString() << "\n";
            return kExitUsage;
        }
    } else {
        std::fprintf(stderr, "tunebench-cli launch: run %s on %zu node(s), preflight\n",
            cluster.options().runId.c_str(), cluster.options().hosts.size());
        if (common::Status checked = cluster.preflight(sink); !checked) {
            std::cerr << "tunebench-cli launch: " << checked.error().toString() << "\n";
            return kExitUsage;
        }
        if (p.isSet("preflight-only")) {
            std::fprintf(
                stderr, "tunebench-cli launch: preflight passed on every node; nothing started\n");
            return kExitOk;
        }
    }
    launch::CancelToken cancel, detach;
    g_clusterCancel = &cancel;
    g_clusterDetach = &detach;
    struct sigaction action { };
    action.sa_handler = onClusterSignal;
    sigemptyset(&action.sa_mask);
    for (int signal : {SIGINT, SIGTERM, SIGHUP})
        sigaction(signal, &action, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    common::Result<remote::ClusterReport> report = earlierRun.empty()
        ? cluster.run(sink, cancel, detach)
        : cluster.follow(sink, cancel, detach, p.isSet("stop"));
    g_clusterCancel = g_clusterDetach = nullptr;
    if (!report) {
        std::cerr << "tunebench-cli launch: " << report.error().toString() << "\n";
        return kExitFailure;
    }
    sink.ended(*report);
    if (report->outcome == remote::ClusterOutcome::Detached) {
        std::fprintf(stderr,
            "tunebench-cli launch: detached; run %s goes on. Follow it again with:\n"
            "  tunebench-cli monitor --host %s --run %s --from-offset %llu --from-line %llu\n",
            report->runId.c_str(), monitorHost(cluster.options().hosts.front()).c_str(),
            launch::shellQuote(report->runId).c_str(),
            static_cast<unsigned long long>(report->eventOffset),
            static_cast<unsigned long long>(report->eventLine));
        return exitStatusOf(*report);
    }
    std::fprintf(stderr, "tunebench-cli launch: run %s %s%s%s\n", report->runId.c_str(),
        report->outcome == remote::ClusterOutcome::Succeeded     ? "finished on every node"
            : report->outcome == remote::ClusterOutcome::Stopped ? "stopped"
                                                                 : "failed",
        report->message.empty() ? "" : ": ", report->message.c_str());
    // --stop did what it was asked.
    if (p.isSet("stop") && report->outcome == remote::ClusterOutcome::Stopped)
        return kExitOk;
    return exitStatusOf(*report);
}

#else

int runMultiNodeLaunch(const ArgParser&, const std::vector<std::string>&)
{
    std::cerr << "tunebench-cli launch: --hostfile: this build has no SSH (TUNEBENCH_SSH off)\n";
    return kExitUsage;
}

#endif

} // namespace tb::cli
