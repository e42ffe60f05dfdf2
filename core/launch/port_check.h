#pragma once

#include "common/error.h"

#include <string>

namespace tb::launch {

// The master port's preflight, run on the nodes themselves by
// `tunebench-cli node-check`: the master listens where the c10d store will,
// every other node connects to it, so a port taken on the master or blocked
// between nodes is found before any rank starts (instead of a rendezvous
// that hangs until its timeout).

// What a peer sends first: "tunebench-port-check NONCE NODE_RANK\n". The
// nonce is new for each check (newPortCheckNonce), so a port scanner's bare
// connection, or one from an earlier check, is not taken for a node.
std::string portCheckLine(const std::string& nonce, int nodeRank);
// 32 hex digits from the system's random source.
std::string newPortCheckNonce();
// Empty when `nonce` is 8 to 64 hex digits, else what is wrong with it.
std::string whyNotANonce(const std::string& nonce);

// Listens on `address`:`port` as rank 0's store will (MASTER_ADDR's own
// address, every interface only when it is no address of this machine, and
// then `warning` says so) and waits, at most `timeoutSeconds`, until nodes
// 1..`peers` have each connected and sent their portCheckLine with `nonce`.
// Connections that send anything else, or nothing, are closed and not
// counted. Errors: the port is taken (naming the errno), or nodes are
// missing, naming them and counting the connections that did not count.
common::Status acceptPeers(const std::string& address, int port, int peers,
    const std::string& nonce, double timeoutSeconds, std::string& warning);

// Connects to host:port, trying again until `timeoutSeconds` have passed
// (the master's listener may start a moment later), and sends node
// `nodeRank`'s portCheckLine. The error names the address and the last
// reason.
common::Status connectWithin(const std::string& host, int port, const std::string& nonce,
    int nodeRank, double timeoutSeconds);

} // namespace tb::launch
