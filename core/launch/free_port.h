#pragma once

#include "common/error.h"

#include <string>

namespace tb::launch {

// A TCP port that is free on `host` right now, for rank 0's store. It is
// drawn at random from below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range): ports in that range are handed
// to every bind(0) and outgoing connection on the machine, Gloo's listeners
// included, so a port picked there is often taken again before rank 0 binds
// it when several jobs start at once. A candidate must bind both on `host`
// and on the wildcard address, as the store does. Another process may still
// take the port before rank 0 binds it; torchrun has the same window.
// `host` is an address or a name getaddrinfo resolves.
common::Result<int> pickFreePort(const std::string& host);

} // namespace tb::launch
