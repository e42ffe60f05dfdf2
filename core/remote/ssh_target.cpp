#include "remote/ssh_target.h"

#include "common/text.h"
#include "launch/ssh_user_name.h"

namespace tb::remote {

std::string SshTarget::describe() const
{
    return (user.empty() ? std::string() : user + "@") + host
        + (port > 0 ? ":" + std::to_string(port) : std::string());
}

common::Result<SshTarget> parseSshTarget(const std::string& text)
{
    SshTarget target;
    const std::size_t at = text.rfind('@');
    target.host = at == std::string::npos ? text : text.substr(at + 1);
    if (at != std::string::npos)
        target.user = text.substr(0, at);
    const bool blank = target.host.empty() || (at != std::string::npos && target.user.empty());
    if (blank || target.host.find_first_of(" \t/:") != std::string::npos)
        return common::Error{"host '" + common::escapeControl(text)
                + "': expected [USER@]HOST, e.g. azureuser@10.0.0.4",
            "give the port with --port"};
    if (const std::string why = launch::whyNotAUserName(target.user); !why.empty())
        return common::Error{"host '" + common::escapeControl(text) + "': user '"
                + common::escapeControl(target.user) + "': " + why,
            "expected [USER@]HOST, e.g. azureuser@10.0.0.4"};
    return target;
}

} // namespace tb::remote
