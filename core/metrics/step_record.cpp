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

template <typename T>
T read(const json& body, const char* key, T fallback)
{
    const auto it = body.find(key);
    if (it == body.end() || !it->is_number())
        return fallback;
    return it->get<T>();
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
    record.step = read<int64_t>(body, "step", 0);
    record.loss = read<double>(body, "loss", std::nan(""));
    record.learningRate = read<double>(body, "lr", -1);
    record.gradNorm = read<double>(body, "grad_norm", -1);
    record.tokens = read<int64_t>(body, "tokens", -1);
    record.samples = read<int64_t>(body, "samples", -1);
    record.stepSeconds = read<double>(body, "step_seconds", -1);
    record.tokensPerSecond = read<double>(body, "tokens_per_second", -1);
    record.memAllocatedBytes = read<int64_t>(body, "mem_allocated_bytes", -1);
    record.memPeakBytes = read<int64_t>(body, "mem_peak_bytes", -1);
    record.memReservedBytes = read<int64_t>(body, "mem_reserved_bytes", -1);
    record.memPeakReservedBytes = read<int64_t>(body, "mem_peak_reserved_bytes", -1);
    record.timeSeconds = event.timeSeconds;
    return record;
}

} // namespace tb::metrics
