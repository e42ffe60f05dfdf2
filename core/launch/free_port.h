#pragma once

#include "common/error.h"

#include <string>

namespace tb::launch {

// A TCP port that is free on `host` right now: binds port 0 there (so the
// kernel picks from its ephemeral range), reads the port back and closes the
// socket. Another process may take the port before rank 0 binds it; torchrun
// has the same window. `host` is an address or a name getaddrinfo resolves.
common::Result<int> pickFreePort(const std::string& host);

} // namespace tb::launch
