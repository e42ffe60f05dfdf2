#pragma once

#include <string>
#include <vector>

namespace tb::cli {

// Exit statuses shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1; // the work ran and failed (a run diverged, a rank died)
inline constexpr int kExitUsage = 2; // bad input or a feature not built: nothing was run

using Args = std::vector<std::string>;

// One function per subcommand, each in its own file.
int runPlan(const Args& args);
int runTrain(const Args& args);
int runLaunch(const Args& args);
int runMonitor(const Args& args);
int runRuns(const Args& args);
int runCompare(const Args& args);
int runScaling(const Args& args);
int runExport(const Args& args);
int runTokenize(const Args& args);
int runEval(const Args& args);
int runGenerate(const Args& args);
int runNodeCheck(const Args& args);
int runFetch(const Args& args);

} // namespace tb::cli
