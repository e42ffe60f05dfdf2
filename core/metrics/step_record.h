#pragma once

#include "metrics/event.h"

#include <cstdint>
#include <optional>

namespace tb::metrics {

// One optimizer step as the trainer reports it and the charts plot it.
// Figures a rank does not know (memory on CPU, say) stay negative and are
// left out of the event.
struct StepRecord {
    int64_t step = 0;
    double loss = 0;
    double learningRate = -1;
    double gradNorm = -1;
    int64_t tokens = -1; // tokens in this step, all ranks on rank 0
    int64_t samples = -1;
    double stepSeconds = -1;
    double tokensPerSecond = -1;
    // On a GPU the caching allocator's allocated bytes and their peak
    // (torch.cuda.memory_allocated / max_memory_allocated), with its reserved
    // bytes beside them; on the CPU the process's resident memory and its peak.
    int64_t memAllocatedBytes = -1;
    int64_t memPeakBytes = -1;
    int64_t memReservedBytes = -1; // GPU only
    int64_t memPeakReservedBytes = -1; // GPU only
    // When the event was written (its envelope's time), for wall-time axes;
    // not one of the step's own fields.
    double timeSeconds = 0;

    nlohmann::json toFields() const;
    static StepRecord fromEvent(const Event& event); // event.type must be Step
};

} // namespace tb::metrics
