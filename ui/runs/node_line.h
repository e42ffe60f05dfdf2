#pragma once

#include <QString>

#include <optional>

namespace tb::ui {

// One line `tunebench-cli launch --hostfile` prints on stderr for a node's
// change of state: "node K HOST STATE DETAIL" (app/cli/multi_node_launch.cpp;
// STATE as remote::toString(NodeState) spells it). Parsed here only.
struct NodeLine {
    int node = 0;
    QString host; // [user@]host[:port], as the hostfile names it
    // connecting, checked, sync (--sync's progress), starting, running,
    // unreachable, exited, vanished
    QString state;
    QString detail;
    std::optional<int> exitCode; // "exited" lines: "exit status N: ..."
    QString runFolder; // "running" lines: "..., run folder DIR, log ..."
};

// The node line `line` is, else nothing (step lines, notes, problems).
std::optional<NodeLine> parseNodeLine(const QString& line);

// A problem the preflight names ("  node K (HOST): what is wrong", listed
// under "preflight found N problem(s); nothing was started:"), else nothing.
struct NodeProblem {
    int node = 0;
    QString text; // the whole problem, host included
};
std::optional<NodeProblem> parseNodeProblem(const QString& line);

// Whether `line` opens the preflight's list of problems.
bool isPreflightFailure(const QString& line);

} // namespace tb::ui
