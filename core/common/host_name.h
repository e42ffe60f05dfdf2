#pragma once

#include <string>

namespace tb::common {

// This machine's host name (gethostname); empty when it cannot be read. Runs
// record it in run_start and in the run registry, and a run's Stop button
// compares it with this machine's.
std::string hostName();

} // namespace tb::common
