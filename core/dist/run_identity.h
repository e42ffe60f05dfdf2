#pragma once

#include "common/error.h"
#include "dist/c10d_handles.h"
#include "dist/rendezvous.h"

#include <chrono>
#include <string>

namespace tb::dist {

// Two jobs handed one MASTER_PORT meet in one store: the first rank 0 to
// bind it serves both. Rank 0 writes its run id under a key outside every
// job's prefix; the other ranks read it before announcing themselves.

// "run/<run id>": every key of the job lives under it (PrefixStore joins
// prefix and key with '/').
std::string jobKeyPrefix(const RankEnvironment& environment);

// Rank 0, right after serving the store.
void announceRunId(c10d::Store& store, const RankEnvironment& environment);

// Waits until rank 0's run id is in `store` (at most until `deadline`) and
// compares it with this rank's. Another job's id: an Error naming both.
// Nothing there by the deadline: Ok, and the arrival wait reports which
// ranks never came.
common::Status checkRunId(c10d::Store& store, const RankEnvironment& environment,
    std::chrono::steady_clock::time_point deadline);

} // namespace tb::dist
