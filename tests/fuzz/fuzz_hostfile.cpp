// A DeepSpeed hostfile (tunebench-cli launch --hostfile), then the
// --include/--exclude filters a user types over it.
#include "fuzz_support.h"
#include "launch/hostfile.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string origin = "fuzz-hosts";
    const std::string_view text = tb::fuzz::asText(data, size);
    auto hosts = tb::launch::parseHostfile(text, origin);
    tb::fuzz::requireValueOrNamedError(hosts, origin);
    if (!hosts.ok())
        return 0;
    for (const tb::launch::HostSlots& host : *hosts) {
        // What was accepted is usable: a host to reach and slots to run on.
        if (host.host.empty() || host.slotIndices.empty() || host.port < 0 || host.port > 65535)
            std::abort();
    }
    // The input's last line doubles as an --include and an --exclude pattern.
    const std::string_view pattern =
        text.substr(text.rfind('\n') == std::string_view::npos ? 0 : text.rfind('\n') + 1);
    (void)tb::launch::filterHosts(*hosts, std::string(pattern), {});
    (void)tb::launch::filterHosts(*hosts, {}, std::string(pattern));
    return 0;
}
