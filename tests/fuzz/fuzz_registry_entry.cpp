// A line of another machine's run registry, as `node-check --registry`
// prints it there and `monitor --host`, `fetch --run` and the multi-node
// supervisor read it here (registryEntryFromJson). A refusal names the
// machine; an accepted entry is usable (a run id that names no folder, a pid
// that signals one process, a node rank and count from 0 and 1) and reads back the same
// after writing.
#include "fuzz_support.h"
#include "launch/run_registry.h"
#include "launch/world_layout.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string origin = "fuzz-host";
    const std::string text(tb::fuzz::asText(data, size));
    const auto entry = tb::launch::registryEntryFromJson(text, origin);
    tb::fuzz::requireValueOrNamedError(entry, origin);
    if (!entry.ok())
        return 0;
    if (!tb::launch::checkRunId(entry->runId).ok() || entry->pid < 0 || entry->pid > 0x7fffffffLL
        || entry->nodeRank < 0 || entry->nnodes < 1)
        std::abort();
    const auto again =
        tb::launch::registryEntryFromJson(tb::launch::registryEntryToJson(*entry), origin);
    if (!again.ok() || again->runId != entry->runId || again->pid != entry->pid
        || again->runDir != entry->runDir || again->state != entry->state
        || again->exitCode != entry->exitCode)
        std::abort();
    return 0;
}
