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

// Restarts VmHWM from the current resident size (writes 5 to
// /proc/self/clear_refs, Linux 4.0+), so a later peak is that of the work
// after this call (training steps, not loading). False when refused.
bool resetPeakResidentMemory();

// Gives the heap's free pages back to the system (glibc's malloc_trim), so
// what one phase freed (loading's read buffers, an export's gathered units)
// is not resident in the next. glibc keeps freed blocks smaller than its
// dynamic mmap threshold (up to 32 MiB) in the heap: without this, ranks of
// the same sharded run differed by 400 MiB of resident memory depending on
// the order of their frees. A no-op on other C libraries.
void releaseFreedHeap();

} // namespace tb::train
