#pragma once

#include "common/error.h"

#include <string>
#include <string_view>
#include <vector>

namespace tb::launch {

// One machine of a multi-node job, as a hostfile line names it.
struct HostSlots {
    std::string user; // empty: the SSH client's (~/.ssh/config, then ours)
    std::string host; // a name or an address, as the other nodes reach it
    int port = 0; // SSH port; 0: ~/.ssh/config's or 22
    // The GPU indices (or rank slots on a CPU node) this node runs ranks on,
    // ascending. All of 0..slotIndices-1 unless --include/--exclude took some away.
    std::vector<int> slotIndices;
    int line = 0; // where the hostfile names it

    // "[user@]host[:port]", as written.
    std::string address() const;
    // Whether --include/--exclude left a subset of its devices, so the node's
    // launcher is to see only those (CUDA_VISIBLE_DEVICES).
    bool slotsRestricted = false;
};

// DeepSpeed's hostfile format: a node a line, "HOST slots=N", '#' starts a
// comment, blank lines ignored. HOST is "[user@]host[:port]". Every problem
// is an Error naming `sourceName`, the line and the text.
common::Result<std::vector<HostSlots>> parseHostfile(
    std::string_view text, const std::string& sourceName);

// Reads and parses the file at `path`.
common::Result<std::vector<HostSlots>> readHostfile(const std::string& path);

// DeepSpeed's --include / --exclude: "host1@host2:0,2" keeps (or drops) whole
// hosts and, after a colon, single slots of a host. At most one of the two
// may be given; an unknown host or slot is an Error naming it. The order of
// the hostfile is kept: its first node is node 0.
common::Result<std::vector<HostSlots>> filterHosts(
    std::vector<HostSlots> hosts, const std::string& include, const std::string& exclude);

} // namespace tb::launch
