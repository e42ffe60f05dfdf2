#pragma once

#include "common/error.h"
#include "dist/c10d_handles.h"
#include "dist/rendezvous.h"

#include <chrono>
#include <string>

namespace tb::dist {

// The store is plain TCP without authentication: whoever reaches its port
// can read and write its keys. With a run secret (RankEnvironment::runSecret)
// every rank proves it knows the secret before the process groups are made,
// and rank 0 proves it back, by HMAC-SHA256 over a fresh nonce of the
// verifier's: a process without the secret cannot take a rank's place, and a
// store that is not rank 0's cannot pass for it. Proofs bind the run id, the
// rank and the role, so one read in the store proves nothing elsewhere.
// What it cannot stop is a stranger that reaches the port disturbing the
// store (docs/LAUNCH.md, "What listens").

// Rank 0, before awaitAllRanks: states in the store whether this job needs
// a secret and, if so, posts the nonce the ranks' proofs are made over and
// returns it (empty without a secret). Throws what the store throws.
std::string postJoinChallenge(c10d::Store& store, const RankEnvironment& environment);

// The rest runs after awaitAllRanks, at most until `deadline`, and throws
// what the store throws. An Error names the rank, or the side, that could
// not prove the secret.
// Rank 0: checks each other rank's proof over `challenge` and answers it;
// without a secret, checks that no rank refused to join for lack of one.
common::Status admitRanks(c10d::Store& store, const RankEnvironment& environment,
    const std::string& challenge, std::chrono::steady_clock::time_point deadline);
// Any other rank: proves itself over rank 0's challenge and checks rank 0's
// answer; without a secret, checks that rank 0 has none either.
common::Status joinWithProof(c10d::Store& store, const RankEnvironment& environment,
    std::chrono::steady_clock::time_point deadline);

// HMAC-SHA256 of `message` under the hex `secret`, as lowercase hex.
std::string hmacSha256Hex(const std::string& secret, const std::string& message);

// A text followed by its HMAC under the run secret on a line of its own, so
// a reader can tell it was written by a rank of this run (the liveness
// verdict). Without a secret, the text as it is.
std::string signText(const std::string& secret, const std::string& runId, const std::string& text);
// The text of signText(); empty when the signature does not match.
std::string verifiedText(
    const std::string& secret, const std::string& runId, const std::string& signedText);

} // namespace tb::dist
