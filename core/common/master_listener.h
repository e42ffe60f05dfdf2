#pragma once

#include "common/error.h"

#include <string>

// The listening socket of a distributed job's master port: rank 0's TCPStore
// and the preflight's port check. c10d's server binds every interface; the
// store has no authentication, so anyone who reaches its port could end the
// job or misroute its Gloo connections (docs/LAUNCH.md, "What listens").
// This socket is bound to MASTER_ADDR's own address instead: the loopback
// for a job on one machine, node 0's address on the cluster's network for
// several. No LibTorch.
namespace tb::common {

struct MasterListener {
    int fd = -1; // listening, close-on-exec; a TCPStore takes it over
    // Set when MASTER_ADDR is no address of this machine (a NAT's public
    // address): the socket then listens on every interface, and this says
    // so (`what` names who listens there).
    std::string warning;
};

// Binds and listens on `address`:`port` (a name or a numeric address);
// `who` names the listener in errors ("rank 0", "the port check") and
// `what` in the warning ("the store").
Result<MasterListener> listenOnMasterAddress(
    const std::string& address, int port, const std::string& who, const std::string& what);

} // namespace tb::common
