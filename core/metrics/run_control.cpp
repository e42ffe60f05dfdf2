#include "metrics/run_control.h"

#include "common/build_info.h"
#include "common/local_machine.h"
#include "common/text.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace tb::metrics {

common::Result<long long> stoppableTrainer(const RunHistory& history, const std::string& hostName,
    const std::function<std::string(long long pid)>& commandLineOf)
{
    using common::Error;
    if (!history.start())
        return Error{"no run_start has been read", {}};
    if (history.end())
        return Error{"the run has ended (" + history.end()->status + ")", {}};
    const RunStartInfo& start = *history.start();
    if (start.pid <= 0)
        return Error{"its run_start names no pid (a trainer older than this program)", {}};
    if (start.host != hostName)
        return Error{"it runs on " + start.host + ", not on " + hostName, {}};
    const std::string command = commandLineOf(start.pid);
    if (command.empty())
        return Error{"process " + std::to_string(start.pid) + " on " + hostName
                + " is gone: the run stopped without a run_end (killed?)",
            {}};
    if (!isTrainerCommand(command))
        return Error{"process " + std::to_string(start.pid) + " on " + hostName
                + " is no longer the trainer (" + command.substr(0, 80) + ")",
            {}};
    return start.pid;
}

bool isTrainerCommand(const std::string& commandLine)
{
    return commandLine.find(common::buildinfo::kTrainerExecutable) != std::string::npos
        && commandLine.find(" train ") != std::string::npos;
}

common::Result<long long> stopLocalTrainer(const RunHistory& history)
{
    const common::Result<long long> pid =
        stoppableTrainer(history, common::hostName(), common::processCommandLine);
    if (!pid)
        return pid;
    if (::kill(static_cast<pid_t>(*pid), SIGTERM) != 0)
        return common::Error{
            "could not signal process " + std::to_string(*pid) + ": " + std::strerror(errno), {}};
    return pid;
}

} // namespace tb::metrics
