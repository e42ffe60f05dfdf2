#include "remote/remote_run_control.h"

#include "common/text.h"
#include "metrics/run_control.h"

namespace tb::remote {

common::Result<long long> stopRemoteRun(SshSession& session, const metrics::RunHistory& history)
{
    const common::Result<CommandResult> host = session.run("hostname");
    if (!host)
        return host.error();
    if (host->exitStatus != 0)
        return common::Error{
            session.target().describe() + ": 'hostname' failed: " + common::trim(host->errorOutput),
            {}};
    std::string readFailure;
    const auto commandLineOf = [&](long long pid) -> std::string {
        const common::Result<CommandResult> read =
            session.run("tr '\\0' ' ' < /proc/" + std::to_string(pid) + "/cmdline");
        if (!read) {
            readFailure = read.error().message;
            return {};
        }
        return read->exitStatus == 0 ? common::trim(read->output) : std::string();
    };
    const common::Result<long long> pid =
        metrics::stoppableTrainer(history, common::trim(host->output), commandLineOf);
    if (!readFailure.empty())
        return common::Error{readFailure, {}};
    if (!pid)
        return common::Error{
            session.target().describe() + ": not stopped: " + pid.error().message, {}};
    const common::Result<CommandResult> kill = session.run("kill -TERM " + std::to_string(*pid));
    if (!kill)
        return kill.error();
    if (kill->exitStatus != 0)
        return common::Error{session.target().describe() + ": kill -TERM " + std::to_string(*pid)
                + " failed: " + common::trim(kill->errorOutput),
            "is the run owned by another user than the one logged in?"};
    return *pid;
}

} // namespace tb::remote
