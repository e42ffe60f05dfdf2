// tunebench-cli fetch: a run's exports (the PEFT adapter, the merged model)
// copied back from the machine it ran on over SFTP, with progress; resumable,
// each file's SHA-256 checked against the original (docs/MONITOR.md).
#include "arg_parser.h"
#include "commands.h"
#include "this_executable.h"

#include "common/units.h"

#ifdef TB_HAVE_SSH
#include "remote/remote_names.h"
#include "remote/remote_registry.h"
#include "remote/sftp_transfer.h"
#include "remote/ssh_session.h"
#include "ssh_options.h"
#endif

#include <chrono>
#include <cstdio>
#include <iostream>

namespace tb::cli {

namespace {

ArgParser fetchParser()
{
    ArgParser p("fetch",
        "Copy a finished run's exports back from the machine it ran on, over SFTP: the\n"
        "adapter (PEFT) and/or the merged model under the run folder. Files already here and\n"
        "equal are skipped; an interrupted copy goes on where it stopped; every file's\n"
        "SHA-256 is checked against the original.");
    p.addPositional("RUN_DIR", "the run folder there (or give --run)");
#ifdef TB_HAVE_SSH
    addSshOptions(p, "the machine the run is on");
#endif
    p.addOption(
        "run", "ID", "the run with this id in the machine's run registry (node 0's folder)");
    p.addOption(
        "remote-cli", "PATH", "tunebench-cli there, for --run (default: this executable's path)");
    p.addOption("what", "KIND", "adapter, merged or exports (both, default)");
    p.addOption("to", "DIR", "where to put them (default: ./<run folder's name>)");
    p.setEpilog(
        "Exit status: 0 copied (or already here), 1 a copy failed, 2 bad input or no connection.");
    return p;
}

#ifdef TB_HAVE_SSH

common::Result<std::string> runFolder(const ArgParser& p, remote::SshSession& session)
{
    if (!p.isSet("run"))
        return p.positionals().front();
    common::Result<std::vector<launch::RegistryEntry>> entries =
        remote::remoteRegistry(session, p.value("remote-cli", thisExecutable()), p.value("run"));
    if (!entries)
        return entries.error();
    for (const launch::RegistryEntry& entry : *entries) {
        if (entry.nodeRank == 0)
            return entry.runDir;
    }
    return common::Error{
        "fetch: --run: no run '" + p.value("run") + "' with node 0 in the registry there",
        "'tunebench-cli monitor --host HOST' lists the runs there"};
}

// Prints the bar at most twice a second, and the last state.
remote::ProgressCallback progressPrinter()
{
    auto last = std::make_shared<std::chrono::steady_clock::time_point>();
    return [last](const remote::TransferProgress& p) {
        const auto now = std::chrono::steady_clock::now();
        if (now - *last < std::chrono::milliseconds(500) && p.bytesDone < p.bytes)
            return;
        *last = now;
        const double percent = p.bytes ? 100.0 * double(p.bytesDone) / double(p.bytes) : 100.0;
        std::fprintf(stderr, "fetch %5.1f%% of %s  %s\n", percent,
            common::formatBytes(double(p.bytes)).c_str(), p.path.c_str());
    };
}

std::vector<std::string> kindsOf(const std::string& what)
{
    if (what == "adapter" || what == "merged")
        return {what};
    if (what == "exports")
        return {"adapter", "merged"};
    return {};
}

int fetch(const ArgParser& p)
{
    const std::vector<std::string> kinds = kindsOf(p.value("what", "exports"));
    if (kinds.empty()) {
        std::cerr << "fetch: --what: got '" << p.value("what")
                  << "', expected adapter, merged or exports\n";
        return kExitUsage;
    }
    common::Result<std::unique_ptr<remote::SshSession>> session = connectWithOptions(p, "fetch");
    if (!session) {
        std::cerr << "tunebench-cli fetch: " << session.error().toString() << "\n";
        return kExitUsage;
    }
    common::Result<std::string> folder = runFolder(p, **session);
    if (!folder) {
        std::cerr << "tunebench-cli fetch: " << folder.error().toString() << "\n";
        return kExitUsage;
    }
    common::Result<std::string> to = p.isSet("to") ? common::Result<std::string>(p.value("to"))
                                                   : remote::defaultFetchFolder(*folder);
    if (!to) {
        std::cerr << "tunebench-cli fetch: " << to.error().toString() << "\n";
        return kExitUsage;
    }
    int fetched = 0;
    for (const std::string& kind : kinds) {
        // "exports": a run writes one of the two unless told both.
        if (kinds.size() > 1 && !remote::remoteFolderExists(**session, *folder + "/" + kind))
            continue;
        common::Result<remote::TransferSummary> summary = remote::downloadTree(
            **session, *folder + "/" + kind, *to + "/" + kind, progressPrinter());
        if (!summary) {
            std::cerr << "tunebench-cli fetch: " << summary.error().toString() << "\n";
            return kExitFailure;
        }
        ++fetched;
        std::printf("%s: %d file(s) copied (%d resumed, %s), %d already here and equal -> %s/%s\n",
            kind.c_str(), summary->copied, summary->resumed,
            common::formatBytes(double(summary->bytesSent)).c_str(), summary->skipped, to->c_str(),
            kind.c_str());
    }
    if (fetched == 0) {
        std::cerr << "tunebench-cli fetch: " << *folder
                  << " has no adapter/ or merged/ export (has the run finished?)\n";
        return kExitFailure;
    }
    return kExitOk;
}

#endif

} // namespace

int runFetch(const Args& args)
{
    ArgParser p = fetchParser();
    if (const std::optional<int> status = p.parseOrExitStatus(args))
        return *status;
    if (!p.isSet("host") || (p.positionals().size() == 1) == p.isSet("run")
        || p.positionals().size() > 1) {
        std::cerr << "fetch: expected --host and either one run folder or --run ID (see "
                     "tunebench-cli fetch --help)\n";
        return kExitUsage;
    }
#ifdef TB_HAVE_SSH
    return fetch(p);
#else
    std::cerr << "fetch: this build has no SSH (TUNEBENCH_SSH off)\n";
    return kExitUsage;
#endif
}

} // namespace tb::cli
