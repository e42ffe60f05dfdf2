#pragma once

#include <string>

namespace tb::launch {

// Why `user` is no user name to give SSH, or empty when it is one: letters,
// digits, '.', '_' and '-', not starting with '-'. libssh expands the name
// into a ProxyCommand's %r unchecked, where a shell reads it (as OpenSSH's
// CVE-2023-51385), and an option-like name would reach ssh. Every user name
// Tunebench passes to SSH (a hostfile's, --host's) is checked here.
std::string whyNotAUserName(const std::string& user);

} // namespace tb::launch
