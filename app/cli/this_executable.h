#pragma once

#include <string>

namespace tb::cli {

// The path of the running tunebench-cli (/proc/self/exe): what the ranks of
// `launch` run, and the default path of tunebench-cli on other machines of a
// job. Empty when it cannot be read.
std::string thisExecutable();

} // namespace tb::cli
