#pragma once

#include "dist/c10d_handles.h"
#include "dist/rendezvous.h"

#include <chrono>

namespace tb::dist {

// Announces this rank in the rendezvous store ("arrived/<rank>") and waits
// until every rank has, at most until `deadline`. On time-out the Error names
// the ranks that never arrived; rank 0 also leaves that verdict in the store
// so the ranks that did arrive report the same missing ranks.
common::Status awaitAllRanks(c10d::Store& store, const RankEnvironment& environment,
    double timeoutSeconds, std::chrono::steady_clock::time_point deadline);

// "rendezvous at 127.0.0.1:29500"
std::string rendezvousPlace(const RankEnvironment& environment);

// "5 s", "2.5 s"
std::string formatSeconds(double seconds);

} // namespace tb::dist
