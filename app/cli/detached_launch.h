#pragma once

#include "launch/run_registry.h"

#include <functional>
#include <string>

namespace tb::cli {

// How this node's launch ended: its exit status and summary line.
struct LaunchEnd {
    int exitStatus = 1;
    std::string summary;
    bool stoppedOnRequest = false; // the ranks were stopped by a forwarded signal
};

// `launch --detach`: forks a child that leaves the terminal's session (so a
// closed SSH link or terminal does not end it), sends its output to
// entry.log, records `entry` (with its pid and start time) at `entryPath`,
// runs `supervise` and records how it ended. The parent returns once the
// entry is written, after printing it as one JSON line; 0, or 2 when the
// child could not start.
int detachAndSupervise(launch::RegistryEntry entry, const std::string& entryPath,
    const std::function<LaunchEnd()>& supervise);

} // namespace tb::cli
