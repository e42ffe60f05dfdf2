#include "train/process_memory.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <fstream>
#include <sstream>
#include <string>

namespace tb::train {

ProcessMemory processMemory()
{
    ProcessMemory memory;
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        // "VmRSS:	  123456 kB"
        const bool rss = line.starts_with("VmRSS:");
        const bool hwm = line.starts_with("VmHWM:");
        if (!rss && !hwm)
            continue;
        std::istringstream fields(line.substr(6));
        std::int64_t kib = -1;
        if (!(fields >> kib))
            continue;
        (rss ? memory.residentBytes : memory.peakResidentBytes) = kib * 1024;
    }
    return memory;
}

bool resetPeakResidentMemory()
{
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    return static_cast<bool>(clear);
}

void releaseFreedHeap()
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

} // namespace tb::train
