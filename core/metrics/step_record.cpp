#include "metrics/step_record.h"

#include <cmath>

namespace tb::metrics {

namespace {

using nlohmann::json;

void putIfKnown(json& fields, const char* key, double value)
{
    if (value >= 0 && std::isfinite(value))
        fields[key] = value;
}

void putIfKnown(json& fields, const char* key, int64_t value)
{
    if (value >= 0)
        fields[key] = value;
}

} // namespace

json StepRecord::toFields() const
{
    json fields = json::object();
    fields["step"] = step;
    fields["loss"] = std::isfinite(loss) ? json(loss) : json(nullptr);
    putIfKnown(fields, "lr", learningRate);
    putIfKnown(fields, "grad_norm", gradNorm);
    putIfKnown(fields, "tokens", tokens);
    putIfKnown(fields, "samples", samples);
    putIfKnown(fields, "step_seconds", stepSeconds);
    putIfKnown(fields, "tokens_per_second", tokensPerSecond);
    putIfKnown(fields, "mem_allocated_bytes", memAllocatedBytes);
    putIfKnown(fields, "mem_peak_bytes", memPeakBytes);
    putIfKnown(fields, "mem_reserved_bytes", memReservedBytes);
    putIfKnown(fields, "mem_peak_reserved_bytes", memPeakReservedBytes);
    return fields;
}

StepRecord StepRecord::fromEvent(const Event& event)
{
    const json& body = event.body;
    StepRecord record;
    record.step = numberField<int64_t>(body, "step", 0);
    record.loss = numberField<double>(body, "loss", std::nan(""));
    record.learningRate = numberField<double>(body, "lr", -1);
    record.gradNorm = numberField<double>(body, "grad_norm", -1);
    record.tokens = numberField<int64_t>(body, "tokens", -1);
    record.samples = numberField<int64_t>(body, "samples", -1);
    record.stepSeconds = numberField<double>(body, "step_seconds", -1);
    record.tokensPerSecond = numberField<double>(body, "tokens_per_second", -1);
    record.memAllocatedBytes = numberField<int64_t>(body, "mem_allocated_bytes", -1);
    record.memPeakBytes = numberField<int64_t>(body, "mem_peak_bytes", -1);
    record.memReservedBytes = numberField<int64_t>(body, "mem_reserved_bytes", -1);
    record.memPeakReservedBytes = numberField<int64_t>(body, "mem_peak_reserved_bytes", -1);
    record.timeSeconds = event.timeSeconds;
    return record;
}

} // namespace tb::metrics
