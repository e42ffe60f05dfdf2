// tunebench-cli scaling: a scaling probe. The same recipe at each rank count
// for a few steps, each through `tunebench-cli launch`, then the comparison
// of the runs: tokens/s and efficiency against the count.
#include "arg_parser.h"
#include "commands.h"
#include "compare_report.h"

#include "common/text.h"
#include "config/config_loader.h"
#include "config/config_writer.h"

#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace tb::cli {

namespace {

namespace fs = std::filesystem;

// The launcher running now: a signal to the probe is passed on to it (which
// stops its ranks gracefully) and ends the probe after that size.
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_stopSignal = 0;

void forwardSignal(int signal)
{
    g_stopSignal = signal;
    if (g_child > 0)
        ::kill(pid_t(g_child), signal);
}

ArgParser scalingParser()
{
    ArgParser p("scaling",
        "Scaling probe: run the recipe of RUN.yaml at each rank count for a few steps, one "
        "after the other (tunebench-cli launch --nproc N), then compare the runs: steady "
        "tokens/s, tokens/s per rank and the efficiency against the smallest count, and each "
        "run against the planner's prediction. Each run gets its own folder, DIR/np<N>, with "
        "the run config it ran (run.yaml) and the launcher's output (launch.log).");
    p.addPositional("RUN.yaml", "the recipe (docs/RUN_CONFIG.md)");
    p.addOption("nproc", "N,N,...", "rank counts on this machine (default 1,2,4)");
    p.addOption("steps", "K", "optimizer steps per run, at least 3 (default 20)");
    p.addOption(
        "out", "DIR", "where the runs go (default: the config's output.dir + \"-scaling\")");
    p.setEpilog("Exit status: 0 every run completed, 1 a run failed, 2 bad input.");
    return p;
}

common::Result<std::vector<int>> rankCounts(const std::string& text)
{
    std::vector<int> counts;
    for (const std::string& part : common::split(text, ',')) {
        const std::string word = common::trim(part);
        char* end = nullptr;
        const long value = std::strtol(word.c_str(), &end, 10);
        if (word.empty() || *end != '\0' || value < 1 || value > 1024)
            return common::Error{"scaling: --nproc: '" + word + "' in '" + text
                    + "' is not a rank count (expected integers 1 to 1024, comma-separated)",
                {}};
        counts.push_back(int(value));
    }
    return counts;
}

// The recipe as the probe runs it at `ranks`: its own name and folder, K steps.
config::RunConfig probeConfig(
    config::RunConfig recipe, int ranks, long long steps, const fs::path& dir)
{
    const std::string base = recipe.name.empty() ? "run" : recipe.name;
    recipe.name = base + "-np" + std::to_string(ranks);
    recipe.output.dir = dir.string();
    recipe.training.maxSteps = steps;
    recipe.output.checkpointEvery = 0; // one checkpoint, at the end
    return recipe;
}

// tunebench-cli launch CONFIG --nproc N, output to `log`; its exit status.
int launchAndWait(const fs::path& config, int ranks, const fs::path& log)
{
    std::error_code error;
    const fs::path self = fs::read_symlink("/proc/self/exe", error);
    std::vector<std::string> words{
        self.string(), "launch", config.string(), "--nproc", std::to_string(ranks)};
    std::vector<char*> argv;
    for (std::string& word : words)
        argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(
        &actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    // Its own process group: a terminal's Ctrl-C reaches it once, through
    // forwardSignal(), not twice.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    pid_t pid = 0;
    const int spawned =
        posix_spawn(&pid, self.c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawned != 0)
        return -1;
    g_child = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) { }
    g_child = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

int runScaling(const Args& args)
{
    ArgParser p = scalingParser();
    if (const std::optional<int> status = p.parseOrExitStatus(args))
        return *status;
    if (p.positionals().size() != 1) {
        std::cerr << "scaling: expected one run config, got " << p.positionals().size()
                  << " arguments (see tunebench-cli scaling --help)\n";
        return kExitUsage;
    }
    const common::Result<std::vector<int>> counts = rankCounts(p.value("nproc", "1,2,4"));
    const common::Result<long long> steps = p.integer("steps", 20, 3, 1000000);
    const common::Result<config::RunConfig> recipe = config::loadRunConfig(p.positionals()[0]);
    for (const common::Error* error : {counts ? nullptr : &counts.error(),
             steps ? nullptr : &steps.error(), recipe ? nullptr : &recipe.error()}) {
        if (error) {
            std::cerr << "tunebench-cli " << error->toString() << "\n";
            return kExitUsage;
        }
    }
    const fs::path out =
        fs::absolute(p.value("out", recipe->output.dir + "-scaling")).lexically_normal();
    struct sigaction action { };
    action.sa_handler = forwardSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    std::vector<metrics::RunEntry> runs;
    int failures = 0;
    for (const int ranks : *counts) {
        if (g_stopSignal != 0) {
            std::cout << "np " << ranks << ": not started (stopped by signal " << g_stopSignal
                      << ")\n";
            continue;
        }
        const fs::path dir = out / ("np" + std::to_string(ranks));
        std::error_code error;
        fs::create_directories(dir, error);
        const config::RunConfig config = probeConfig(*recipe, ranks, *steps, dir);
        if (common::Status saved = config::saveRunConfig((dir / "run.yaml").string(), config);
            !saved) {
            std::cerr << "tunebench-cli scaling: " << saved.error().toString() << "\n";
            return kExitFailure;
        }
        std::cout << "np " << ranks << ": " << *steps << " steps in " << dir.string() << " ..."
                  << std::flush;
        const int status = launchAndWait(dir / "run.yaml", ranks, dir / "launch.log");
        std::cout << (status == 0 ? " done\n"
                                  : " failed (exit status " + std::to_string(status) + ", see "
                    + (dir / "launch.log").string() + ")\n");
        failures += status != 0;
        runs.push_back(metrics::readRunEntry(dir.string()));
    }
    std::cout << "\n";
    printComparison(std::cout, runs);
    return failures == 0 && g_stopSignal == 0 ? kExitOk : kExitFailure;
}

} // namespace tb::cli
