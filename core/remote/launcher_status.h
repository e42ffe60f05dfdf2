#pragma once

#include "common/error.h"
#include "remote/cluster_launch.h"

#include <string>
#include <string_view>
#include <vector>

// The machine-readable side of `tunebench-cli launch --hostfile`: with
// --status-json it writes one JSON object a line on stdout for each node's
// change of state, each transfer's progress, each note, the preflight's
// refusal and the launch's end (docs/EVENTS.md, "Launcher status lines").
// The GUI's Runs page reads these; the lines on stderr are for people and may
// change wording at any time.
namespace tb::remote {

struct LauncherStatus {
    enum class Type { Node, Transfer, Note, PreflightFailed, End };
    Type type = Type::Note;
    NodeUpdate node; // Node
    int transferNode = 0; // Transfer: which node, its host, how far
    std::string transferHost;
    TransferProgress transfer;
    std::string text; // Note; End: the outcome's message
    std::vector<std::string> problems; // PreflightFailed
    std::string outcome; // End: succeeded, failed, stopped, detached
    std::string runId; // End
};

std::string toJsonLine(const LauncherStatus& status); // no trailing newline
// A status line read back; a line that is not one is an Error saying what
// is wrong with it (a field, its value, what was expected).
common::Result<LauncherStatus> parseLauncherStatus(std::string_view line);

std::string_view toString(ClusterOutcome outcome);

} // namespace tb::remote
