#include "remote/host_probe.h"

#include <cstdio>

namespace tb::remote {

using common::Error;

common::Result<HostFacts> probeHost(SshSession& session)
{
    const common::Result<CommandResult> result = session.run(hostProbeScript());
    if (!result)
        return result.error();
    if (result->exitStatus != 0)
        return Error{session.target().describe() + ": the probe exited with status "
                + std::to_string(result->exitStatus) + ": " + result->errorOutput,
            {}};
    common::Result<HostFacts> facts = parseHostProbe(result->output);
    if (!facts)
        return Error{
            session.target().describe() + ": " + facts.error().message, facts.error().hint};
    return facts;
}

common::Result<HostFacts> probeLocalHost()
{
    // popen runs its command with /bin/sh -c, as sshd runs it remotely.
    FILE* pipe = ::popen(hostProbeScript().c_str(), "r");
    if (!pipe)
        return Error{"this machine: cannot run the probe", {}};
    std::string output;
    char buffer[4096];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0)
        output.append(buffer, n);
    ::pclose(pipe);
    return parseHostProbe(output);
}

} // namespace tb::remote
