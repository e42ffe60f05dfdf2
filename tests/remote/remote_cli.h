#pragma once

// What the suites against a loopback sshd share: tunebench-cli run with the
// flags a user gives to reach that host, and the run_start line their event
// files begin with.
#include "../support/cli_outcome.h"
#include "../support/qt_test_paths.h"
#include "sshd_target.h"

#include "metrics/event.h"

#include <QStringList>

namespace tb::test {

using CliRun = CliOutcome;

inline CliRun runCli(
    const QStringList& arguments, int timeoutMs = 120000, const QString& workingDir = {})
{
    ProgramSetup setup;
    setup.workingDirectory = workingDir;
    return runProgram(qBuildPath("app/cli/tunebench-cli"), arguments, timeoutMs, setup);
}

// --host, --port, --identity and --known-hosts for `server`.
inline QStringList cliSshArguments(const SshdServer& server)
{
    return {QStringLiteral("--host"), server.user() + QStringLiteral("@127.0.0.1"),
        QStringLiteral("--port"), QString::number(server.port()), QStringLiteral("--identity"),
        server.userKey(), QStringLiteral("--known-hosts"), server.knownHosts()};
}

// A run of 4 steps, "remote-demo" on "somewhere".
inline std::string remoteRunStartEvent()
{
    return tb::metrics::makeEvent(tb::metrics::EventType::RunStart, 0, 1.0e9,
        {{"run_id", "remote-demo"}, {"world_size", 1}, {"config", nlohmann::json::object()},
            {"model", {{"name", "stories260K"}}}, {"total_steps", 4}, {"host", "somewhere"}})
        .dump();
}

} // namespace tb::test
