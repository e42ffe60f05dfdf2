#pragma once

#include "arg_parser.h"

#include "common/error.h"
#include "remote/ssh_session.h"

#include <memory>
#include <string>

namespace tb::cli {

// --host, --port, --identity, --known-hosts and --ssh-timeout, as `monitor`
// and `fetch` take them, and the session they describe. Only in builds with SSH.
void addSshOptions(ArgParser& parser, const std::string& hostHelp);
common::Result<std::unique_ptr<remote::SshSession>> connectWithOptions(
    const ArgParser& parser, const std::string& command);

} // namespace tb::cli
