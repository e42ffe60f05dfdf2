// What a machine answers to the host probe (hostname, nproc, /proc/meminfo,
// nvidia-smi's table, the trainers running there), as the Hosts page and
// `tunebench-cli hosts` read it (remote::parseHostProbe). A refusal names
// the probe and quotes the host's text without control characters; accepted
// facts hold a host name and a CPU count in range.
#include "common/text.h"
#include "fuzz_support.h"
#include "remote/host_facts.h"

#include <algorithm>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto facts = tb::remote::parseHostProbe(std::string(tb::fuzz::asText(data, size)));
    tb::fuzz::requireValueOrNamedError(facts, "host probe");
    if (!facts.ok()) {
        const std::string& message = facts.error().message;
        if (std::any_of(message.begin(), message.end(), tb::common::isControlCharacter))
            std::abort();
        return 0;
    }
    if (facts->hostName.empty() || facts->cpuCount < 1)
        std::abort();
    for (const tb::remote::GpuFacts& gpu : facts->gpus) {
        if (gpu.utilizationPercent < -1 || gpu.utilizationPercent > 100)
            std::abort();
    }
    return 0;
}
