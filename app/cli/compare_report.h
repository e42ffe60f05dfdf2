#pragma once

#include "metrics/run_catalog.h"

#include <ostream>
#include <vector>

// Human-readable tables of `tunebench-cli runs`, `compare` and `scaling`.
namespace tb::cli {

// name, model, method, ranks, state, steps, last loss, tokens/s, started,
// duration, folder; a folder that could not be read says why.
void printRunsTable(std::ostream& out, const std::vector<metrics::RunEntry>& runs);

// Final loss, tokens/s, per-GPU rate and efficiency against the smallest
// run, then each run's measured figures against its planner prediction.
void printComparison(std::ostream& out, const std::vector<metrics::RunEntry>& runs);

// The same as JSON, for scripts: {"runs": [...], "scaling": [...]}.
void printComparisonJson(std::ostream& out, const std::vector<metrics::RunEntry>& runs);

} // namespace tb::cli
