#pragma once

#include "common/error.h"

#include <string>

namespace tb::launch {

// The master port's preflight, run on the nodes themselves by
// `tunebench-cli node-check`: the master listens where the c10d store will,
// every other node connects to it, so a port taken on the master or blocked
// between nodes is found before any rank starts (instead of a rendezvous
// that hangs until its timeout).

// Binds every address (as the store does) on `port` and accepts `peers`
// connections, at most `timeoutSeconds`. Errors: the port is taken (naming
// the errno), or fewer peers came, saying how many.
common::Status acceptPeers(int port, int peers, double timeoutSeconds);

// Connects to host:port, trying again until `timeoutSeconds` have passed
// (the master's listener may start a moment later). The error names the
// address and the last reason.
common::Status connectWithin(const std::string& host, int port, double timeoutSeconds);

} // namespace tb::launch
