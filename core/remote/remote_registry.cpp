#include "remote/remote_registry.h"

#include "launch/text_quote.h"

#include <sstream>

namespace tb::remote {

common::Result<std::vector<launch::RegistryEntry>> remoteRegistry(
    SshSession& session, const std::string& remoteCli, const std::string& runId)
{
    std::string command = launch::shellQuote(remoteCli) + " node-check --registry";
    if (!runId.empty())
        command += " --run-id " + launch::shellQuote(runId);
    common::Result<CommandResult> answer = session.run(command);
    if (!answer)
        return answer.error();
    const std::string where = session.target().describe();
    if (answer->exitStatus == 127)
        return common::Error{where + ": " + remoteCli + " is not there",
            "give the path of tunebench-cli there (--remote-cli)"};
    if (answer->exitStatus != 0)
        return common::Error{where + ": cannot read the run registry: " + answer->errorOutput, {}};
    std::vector<launch::RegistryEntry> entries;
    std::istringstream lines(answer->output);
    for (std::string line; std::getline(lines, line);) {
        common::Result<launch::RegistryEntry> entry = launch::registryEntryFromJson(line, where);
        if (!entry)
            return entry.error();
        entries.push_back(std::move(entry).value());
    }
    return entries;
}

} // namespace tb::remote
