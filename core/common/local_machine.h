#pragma once

#include <string>

// Facts about this machine that runs and the controls of runs compare:
// recorded in run_start and the run registry by one side, read back by the
// other, so both read them here.
namespace tb::common {

// This machine's host name (gethostname); empty when it cannot be read.
std::string hostName();

// A local process's command line, its arguments joined by spaces
// (/proc/<pid>/cmdline); empty when the process is gone.
std::string processCommandLine(long long pid);

} // namespace tb::common
