#include "arg_parser.h"
#include "commands.h"

#include "config/config_loader.h"
#include "detached_launch.h"
#include "launch/free_port.h"
#include "launch/local_launcher.h"
#include "launch/node_facts.h"
#include "launch/run_registry.h"
#include "launch/world_layout.h"
#include "multi_node_launch.h"
#include "this_executable.h"

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits.h>
#include <string>
#include <unistd.h>

// tunebench-cli launch: this node's ranks of a run, like torchrun
// --nproc_per_node (docs/LAUNCH.md). The work is tb::launch::runLocalLaunch;
// this file parses options, turns signals into the cancel token and prints.
namespace tb::cli {

namespace {

using common::Error;

launch::CancelToken* g_cancel = nullptr;

extern "C" void onStopSignal(int signal)
{
    if (g_cancel)
        g_cancel->cancel(signal); // lock-free atomics only: async-signal-safe
}

// Installs the stop handlers for the launch's lifetime and restores the old ones.
class StopSignals {
public:
    explicit StopSignals(launch::CancelToken& token)
    {
        g_cancel = &token;
        struct sigaction action { };
        action.sa_handler = onStopSignal;
        sigemptyset(&action.sa_mask);
        for (size_t i = 0; i < kSignals.size(); ++i)
            sigaction(kSignals[i], &action, &m_previous[i]);
        // A closed stdout must not kill the launcher and orphan the ranks.
        struct sigaction ignore { };
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        sigaction(SIGPIPE, &ignore, &m_previousPipe);
    }
    ~StopSignals()
    {
        for (size_t i = 0; i < kSignals.size(); ++i)
            sigaction(kSignals[i], &m_previous[i], nullptr);
        sigaction(SIGPIPE, &m_previousPipe, nullptr);
        g_cancel = nullptr;
    }
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

private:
    static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
    std::array<struct sigaction, 3> m_previous{};
    struct sigaction m_previousPipe { };
};

// Each line goes out whole, prefixed, and flushed, so a reader (the GUI, a
// log collector) sees ranks' lines as they come and never half of one.
class PrefixingSink : public launch::LaunchSink {
public:
    void rankOutput(int rank, launch::OutputStream stream, std::string_view line) override
    {
        std::FILE* out = stream == launch::OutputStream::Stdout ? stdout : stderr;
        m_buffer = "[rank " + std::to_string(rank) + "] ";
        m_buffer.append(line);
        m_buffer += '\n';
        std::fwrite(m_buffer.data(), 1, m_buffer.size(), out);
        std::fflush(out);
    }
    void stopping(std::string_view reason) override
    {
        std::fprintf(stderr, "tunebench-cli launch: %.*s; stopping every rank\n",
            int(reason.size()), reason.data());
    }

private:
    std::string m_buffer;
};

ArgParser launchParser()
{
    ArgParser p("launch",
        "Start this node's ranks of a run, like torchrun --nproc_per_node: each rank runs\n"
        "'tunebench-cli train RUN.yaml' with MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,\n"
        "LOCAL_RANK, LOCAL_WORLD_SIZE and NODE_RANK set. Output lines come prefixed with\n"
        "[rank N]. SIGINT/SIGTERM are forwarded to every rank (a second one kills them);\n"
        "when one rank fails the others are stopped and the exit status is 1, naming it.");
    p.addPositional("RUN.yaml", "the run config every rank trains");
    p.addOption("nproc", "N", "ranks on this node (default 1)");
    p.addOption("nnodes", "M", "nodes in the job (default 1)");
    p.addOption("node-rank", "K", "this node's index, 0 to M-1 (default 0)");
    p.addOption(
        "master-addr", "HOST", "address of node 0, where rank 0 listens (default 127.0.0.1)");
    p.addOption(
        "master-port", "PORT", "rank 0's port (default: a free one; needed with --nnodes > 1)");
    p.addOption("run-id", "ID",
        "the job's id, the same on every node (TORCHELASTIC_RUN_ID; default: a new one "
        "on one node, 'none' across nodes)");
    p.addOption(
        "grace", "SECONDS", "time ranks get to stop after SIGTERM before SIGKILL (default 10)");
    p.addOption("trainer", "PATH", "program each rank runs instead of this executable (for tests)");
    p.addOption("devices", "LIST",
        "GPU indices this node's ranks use, e.g. 0,2 (CUDA_VISIBLE_DEVICES; default: all)");
    p.addFlag("detach",
        "start in the background, detached from the terminal and SSH session; record the run in\n"
        "this machine's run registry (monitor --host lists it) and print its entry as JSON");
    addMultiNodeOptions(p);
    p.setEpilog("Arguments after -- go to every rank after RUN.yaml.\n"
                "Exit status: 0 all ranks finished, 1 a rank failed, 2 bad input or nothing\n"
                "could start, 128+N stopped by signal N.");
    return p;
}

common::Result<launch::LaunchOptions> buildOptions(
    const ArgParser& p, const std::vector<std::string>& extra, std::string& runDir)
{
    const std::vector<std::string> positionals = p.positionals();
    if (positionals.size() != 1)
        return Error{"launch: expected one run config (RUN.yaml), got "
                + std::to_string(positionals.size()) + " arguments",
            "see tunebench-cli launch --help"};
    const std::string configPath = positionals[0];
    // Every rank would fail on a bad config; say it once, before starting any.
    const common::Result<config::RunConfig> runConfig = config::loadRunConfig(configPath);
    if (!runConfig)
        return runConfig.error();
    runDir = std::filesystem::absolute(launch::trainerOutputDir(extra, runConfig->output.dir))
                 .lexically_normal()
                 .string();

    launch::LaunchOptions options;
    launch::WorldLayout& layout = options.layout;
    const auto nproc = p.integer("nproc", 1, 1, launch::kMaxProcsPerNode);
    const auto nnodes = p.integer("nnodes", 1, 1, launch::kMaxNodes);
    const auto nodeRank = p.integer("node-rank", 0, 0, launch::kMaxNodes - 1);
    const auto port = p.integer("master-port", 0, 1, 65535);
    const auto grace = p.number("grace", 10.0, 0.0, 3600.0);
    for (const auto* value : {&nproc, &nnodes, &nodeRank, &port}) {
        if (!*value)
            return value->error();
    }
    if (!grace)
        return grace.error();
    layout.nprocPerNode = int(*nproc);
    layout.nnodes = int(*nnodes);
    layout.nodeRank = int(*nodeRank);
    layout.masterPort = int(*port);
    layout.masterAddr = p.value("master-addr", "127.0.0.1");
    layout.runId = p.value("run-id", "");
    if (p.isSet("run-id") && layout.runId.empty())
        return Error{"launch: --run-id: empty, expected the job's id", {}};
    if (layout.nodeRank >= layout.nnodes)
        return Error{"launch: --node-rank: got " + std::to_string(layout.nodeRank)
                + ", expected 0 to " + std::to_string(layout.nnodes - 1) + " (--nnodes "
                + std::to_string(layout.nnodes) + ")",
            {}};
    if (layout.nnodes > 1 && layout.masterPort == 0)
        return Error{"launch: --master-port: needed with --nnodes > 1",
            "every node must use the same port, e.g. 29500"};
    if (layout.nodeRank > 0 && !p.isSet("master-addr"))
        return Error{
            "launch: --master-addr: needed on nodes other than 0", "give the address of node 0"};
    // What the options above do not check (the run id's characters).
    if (common::Status valid = launch::validateLayout(layout); !valid)
        return Error{"launch: " + valid.error().message, {}};
    options.graceSeconds = *grace;
    if (p.isSet("trainer")) {
        options.program = p.value("trainer");
    } else {
        options.program = thisExecutable();
        if (options.program.empty())
            return Error{"launch: cannot find this executable (/proc/self/exe)",
                "give the trainer with --trainer PATH"};
    }
    if (p.isSet("devices")) {
        const std::string devices = p.value("devices");
        if (devices.empty() || devices.find_first_not_of("0123456789,") != std::string::npos)
            return Error{
                "launch: --devices: got '" + devices + "', expected GPU indices like 0,2", {}};
        options.environment = launch::mergeEnvironment(
            launch::currentEnvironment(), {"CUDA_VISIBLE_DEVICES=" + devices});
    }
    options.arguments = {"train", configPath};
    options.arguments.insert(options.arguments.end(), extra.begin(), extra.end());
    return options;
}

LaunchEnd superviseRanks(launch::LaunchOptions& options)
{
    const launch::WorldLayout& layout = options.layout;
    launch::CancelToken cancel;
    const StopSignals signals(cancel);
    PrefixingSink sink;
    std::fprintf(stderr,
        "tunebench-cli launch: %d rank(s) on node %d of %d, world size %d, master %s:%d, "
        "run id %s: %s train %s\n",
        layout.nprocPerNode, layout.nodeRank, layout.nnodes, layout.worldSize(),
        layout.masterAddr.c_str(), layout.masterPort,
        layout.runId.empty() ? "none" : layout.runId.c_str(), options.program.c_str(),
        options.arguments[1].c_str());
    const common::Result<launch::LaunchReport> report =
        launch::runLocalLaunch(options, sink, cancel);
    if (!report) {
        std::cerr << "tunebench-cli launch: " << report.error().toString() << "\n";
        return {kExitUsage, report.error().message};
    }
    std::fprintf(stderr, "tunebench-cli launch: %s\n", report->summary().c_str());
    switch (report->outcome) {
    case launch::LaunchOutcome::Succeeded:
        return {kExitOk, report->summary()};
    case launch::LaunchOutcome::RankFailed:
        return {kExitFailure, report->summary()};
    case launch::LaunchOutcome::Cancelled:
        return {128 + report->stopSignal, report->summary(), true};
    }
    return {kExitFailure, report->summary()};
}

// Detaches into a new session with its output in a log beside its registry
// entry; the parent prints the entry once the child has written it.
int launchDetached(launch::LaunchOptions& options, const std::string& runDir)
{
    const launch::WorldLayout& layout = options.layout;
    launch::RegistryEntry entry;
    entry.runId = layout.runId.empty() ? launch::newRunId() : layout.runId;
    entry.nodeRank = layout.nodeRank;
    entry.nnodes = layout.nnodes;
    entry.nproc = layout.nprocPerNode;
    entry.config = options.arguments[1];
    entry.runDir = runDir;
    const common::Result<std::string> dir = launch::registryDir();
    const common::Status made = dir ? launch::makeRegistryDir(*dir) : common::Status(dir.error());
    if (!made) {
        std::cerr << "tunebench-cli launch --detach: " << made.error().toString() << "\n";
        return kExitUsage;
    }
    const std::string path = launch::registryEntryPath(*dir, entry.runId, entry.nodeRank);
    entry.log = path.substr(0, path.size() - 5) + ".log";
    return detachAndSupervise(entry, path, [&options] { return superviseRanks(options); });
}

} // namespace

int runLaunch(const Args& allArgs)
{
    const auto dashes = std::find(allArgs.begin(), allArgs.end(), "--");
    const Args args(allArgs.begin(), dashes);
    const std::vector<std::string> extra(
        dashes == allArgs.end() ? dashes : dashes + 1, allArgs.end());
    ArgParser p = launchParser();
    if (const std::optional<int> status = p.parseOrExitStatus(args))
        return *status;
    if (p.isSet("hostfile"))
        return runMultiNodeLaunch(p, extra);
    if (const std::string misplaced = multiNodeOptionWithoutHostfile(p); !misplaced.empty()) {
        std::cerr << "tunebench-cli " << misplaced << "\n";
        return kExitUsage;
    }
    std::string runDir;
    common::Result<launch::LaunchOptions> built = buildOptions(p, extra, runDir);
    if (!built) {
        std::cerr << built.error().toString() << "\n";
        return kExitUsage;
    }
    launch::LaunchOptions options = std::move(built).value();

    launch::WorldLayout& layout = options.layout;
    if (layout.masterPort == 0) {
        const common::Result<int> port = launch::pickFreePort(layout.masterAddr);
        if (!port) {
            std::cerr << "launch: --master-addr: " << port.error().toString() << "\n";
            return kExitUsage;
        }
        layout.masterPort = *port;
    }
    if (layout.runId.empty() && layout.nnodes == 1)
        layout.runId = launch::newRunId();
    std::string secretWarning;
    common::Result<std::vector<std::string>> environment = launch::withRunSecret(
        options.environment.empty() ? launch::currentEnvironment() : options.environment, layout,
        secretWarning);
    if (!environment) {
        std::cerr << "launch: " << environment.error().toString() << "\n";
        return kExitUsage;
    }
    options.environment = std::move(environment).value();
    if (!secretWarning.empty())
        std::cerr << "tunebench-cli launch: " << secretWarning << "\n";
    if (p.isSet("detach"))
        return launchDetached(options, runDir);
    return superviseRanks(options).exitStatus;
}

} // namespace tb::cli
