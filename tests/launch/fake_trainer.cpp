// A stand-in for `tunebench-cli train` that the launcher tests start as
// every rank. It does what its options say, so a test can make one rank
// crash, hang, ignore SIGTERM or write awkward output:
//   --steps N          print N step lines (default 3)
//   --step-ms MS       sleep between steps
//   --env              print the rendezvous variables as one line
//   --fds              print how many file descriptors are open
//   --junk             split lines across writes, interleave streams,
//                      invalid UTF-8, a 100,000-byte line, no final newline
//   --fail-rank R      rank R fails after its steps ...
//   --fail-how H       ... by exit:K (default exit:3), abort or segv
//   --sleep-ms MS      other ranks then wait MS (stopping early on SIGTERM/SIGINT)
//   --ignore-term      ignore SIGTERM
//   --ready-file P     create P.<rank> once the signal handlers are in place
//   --run-id ID        ignored: lets a test give it a launcher's command line
// Positional arguments ("train", "run.yaml") are ignored.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

namespace {

volatile std::sig_atomic_t g_stopSignal = 0;

extern "C" void onSignal(int signal)
{
    g_stopSignal = signal;
}

std::string env(const char* name)
{
    const char* value = std::getenv(name);
    return value ? value : "<unset>";
}

void writeAll(int fd, const std::string& text)
{
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        done += size_t(n);
    }
}

void sleepMs(int ms)
{
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Sleeps up to `ms`, returning early when a stop signal arrived.
bool sleepUnlessStopped(long ms)
{
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
        if (g_stopSignal != 0)
            return false;
        sleepMs(5);
    }
    return g_stopSignal == 0;
}

int openFdCount()
{
    DIR* dir = opendir("/proc/self/fd");
    if (!dir)
        return -1;
    int count = 0;
    while (const dirent* entry = readdir(dir)) {
        if (entry->d_name[0] != '.')
            ++count;
    }
    closedir(dir);
    return count - 1; // the directory's own descriptor
}

void writeJunk(int rank)
{
    const std::string r = std::to_string(rank);
    // One line in three writes, with stderr output in between.
    writeAll(1, "alpha-");
    sleepMs(30);
    writeAll(2, "err-one-rank" + r + "\n");
    writeAll(1, "beta-");
    sleepMs(30);
    writeAll(1, "gamma-rank" + r + "\n");
    writeAll(1, "bytes \xff\xfe\xc3 rank" + r + "\r\n");
    writeAll(1, std::string(100000, 'x') + "\n");
    writeAll(1, "unterminated-rank" + r);
}

} // namespace

int main(int argc, char** argv)
{
    int steps = 3;
    int stepMs = 0;
    long sleepAfterMs = 0;
    int failRank = -1;
    std::string failHow = "exit:3";
    bool printEnv = false;
    bool printFds = false;
    bool junk = false;
    bool ignoreTerm = false;
    std::string readyFile;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool hasValue = i + 1 < argc;
        if (arg == "--steps" && hasValue)
            steps = std::atoi(argv[++i]);
        else if (arg == "--step-ms" && hasValue)
            stepMs = std::atoi(argv[++i]);
        else if (arg == "--sleep-ms" && hasValue)
            sleepAfterMs = std::atol(argv[++i]);
        else if (arg == "--fail-rank" && hasValue)
            failRank = std::atoi(argv[++i]);
        else if (arg == "--fail-how" && hasValue)
            failHow = argv[++i];
        else if (arg == "--ready-file" && hasValue)
            readyFile = argv[++i];
        else if (arg == "--run-id" && hasValue)
            ++i;
        else if (arg == "--env")
            printEnv = true;
        else if (arg == "--fds")
            printFds = true;
        else if (arg == "--junk")
            junk = true;
        else if (arg == "--ignore-term")
            ignoreTerm = true;
        else if (arg.rfind("--", 0) == 0) {
            std::fprintf(stderr, "fake_trainer: unknown option %s\n", arg.c_str());
            return 64;
        }
    }
    const int rank = std::atoi(env("RANK").c_str());

    struct sigaction action { };
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    if (ignoreTerm)
        std::signal(SIGTERM, SIG_IGN);
    else
        sigaction(SIGTERM, &action, nullptr);

    std::printf("pid %d rank %d\n", int(getpid()), rank);
    if (printEnv)
        std::printf("env RANK=%s WORLD_SIZE=%s LOCAL_RANK=%s LOCAL_WORLD_SIZE=%s NODE_RANK=%s "
                    "GROUP_RANK=%s MASTER_ADDR=%s MASTER_PORT=%s OMP_NUM_THREADS=%s "
                    "TORCHELASTIC_RUN_ID=%s\n",
            env("RANK").c_str(), env("WORLD_SIZE").c_str(), env("LOCAL_RANK").c_str(),
            env("LOCAL_WORLD_SIZE").c_str(), env("NODE_RANK").c_str(), env("GROUP_RANK").c_str(),
            env("MASTER_ADDR").c_str(), env("MASTER_PORT").c_str(), env("OMP_NUM_THREADS").c_str(),
            env("TORCHELASTIC_RUN_ID").c_str());
    if (printFds)
        std::printf("fds %d\n", openFdCount());
    std::fflush(stdout);
    if (!readyFile.empty()) {
        if (std::FILE* ready = std::fopen((readyFile + "." + std::to_string(rank)).c_str(), "w"))
            std::fclose(ready);
    }
    if (junk) {
        writeJunk(rank);
        return 0;
    }
    for (int step = 1; step <= steps; ++step) {
        std::printf("step %d/%d rank %d loss %.3f\n", step, steps, rank, 2.0 / step);
        std::fflush(stdout);
        if (stepMs > 0 && !sleepUnlessStopped(stepMs))
            break;
    }
    if (rank == failRank && g_stopSignal == 0) {
        std::fprintf(stderr, "fatal: rank %d giving up (simulated failure)\n", rank);
        std::fflush(stderr);
        const rlimit noCore{0, 0}; // a simulated crash leaves no core file behind
        setrlimit(RLIMIT_CORE, &noCore);
        if (failHow == "abort")
            std::abort();
        if (failHow == "segv") {
            // Default action even under a sanitizer that catches SIGSEGV itself.
            struct sigaction fallback { };
            fallback.sa_handler = SIG_DFL;
            sigaction(SIGSEGV, &fallback, nullptr);
            std::raise(SIGSEGV);
        }
        return failHow.rfind("exit:", 0) == 0 ? std::atoi(failHow.c_str() + 5) : 3;
    }
    if (g_stopSignal == 0 && sleepAfterMs > 0)
        sleepUnlessStopped(sleepAfterMs);
    if (g_stopSignal != 0) {
        std::fprintf(stderr, "rank %d: %s received, stopping gracefully\n", rank,
            g_stopSignal == SIGINT ? "SIGINT" : "SIGTERM");
        return 0;
    }
    std::printf("rank %d done\n", rank);
    return 0;
}
