#pragma once

#include <cstdint>

namespace tb::train {

// Resident memory of this process from /proc/self/status: VmRSS (now) and
// VmHWM (the peak since start). What a CPU run reports as its memory in step
// events, since there is no allocator of its own to ask. -1 when unknown.
struct ProcessMemory {
    std::int64_t residentBytes = -1;
    std::int64_t peakResidentBytes = -1;
};

ProcessMemory processMemory();

} // namespace tb::train
