#include "metrics/run_history.h"

#include "common/json_text.h"
#include "common/text.h"

#include <algorithm>
#include <limits>

namespace tb::metrics {

namespace {

using nlohmann::json;

std::string text(const json& body, const char* key)
{
    const auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// An integer field by its type (a float, even 1e300, is not one), in range.
int64_t integer(const json& body, const char* key, int64_t fallback,
    int64_t min = std::numeric_limits<int64_t>::min(),
    int64_t max = std::numeric_limits<int64_t>::max())
{
    const auto it = body.find(key);
    return it == body.end() ? fallback : common::jsonInteger(*it, min, max).value_or(fallback);
}

double number(const json& body, const char* key)
{
    const auto it = body.find(key);
    return it != body.end() && it->is_number() ? it->get<double>() : -1.0;
}

} // namespace

json RunPrediction::toJson() const
{
    json value = {{"device", device},
        {"peak_measure", peakMeasure == PeakMeasure::Allocated ? "allocated" : "resident"}};
    if (!gpu.empty())
        value["gpu"] = gpu;
    if (peakBytesPerRank >= 0)
        value["peak_bytes_per_rank"] = peakBytesPerRank;
    if (tokensPerSecond >= 0)
        value["tokens_per_second"] = tokensPerSecond;
    if (stepSeconds >= 0)
        value["step_seconds"] = stepSeconds;
    json phases = json::object();
    for (const auto& [key, bytes] :
        {std::pair{"load", loadBytesPerRank}, std::pair{"checkpoint", checkpointBytesPerRank},
            std::pair{"export", exportBytesPerRank}})
        if (bytes >= 0)
            phases[key] = bytes;
    if (!phases.empty())
        value["phase_bytes_per_rank"] = phases;
    return value;
}

std::optional<RunPrediction> RunPrediction::fromJson(const json& value)
{
    if (!value.is_object())
        return std::nullopt;
    RunPrediction prediction;
    prediction.device = text(value, "device");
    prediction.gpu = text(value, "gpu");
    prediction.peakMeasure =
        text(value, "peak_measure") == "allocated" ? PeakMeasure::Allocated : PeakMeasure::Resident;
    prediction.peakBytesPerRank = integer(value, "peak_bytes_per_rank", -1);
    prediction.tokensPerSecond = number(value, "tokens_per_second");
    prediction.stepSeconds = number(value, "step_seconds");
    if (const auto phases = value.find("phase_bytes_per_rank");
        phases != value.end() && phases->is_object()) {
        prediction.loadBytesPerRank = integer(*phases, "load", -1);
        prediction.checkpointBytesPerRank = integer(*phases, "checkpoint", -1);
        prediction.exportBytesPerRank = integer(*phases, "export", -1);
    }
    return prediction;
}

void RunHistory::apply(const Event& event)
{
    const json& body = event.body;
    switch (event.type) {
    case EventType::RunStart:
        applyStart(event);
        break;
    case EventType::Step:
        applyStep(event);
        break;
    case EventType::Eval:
        // A loss the trainer could not write as a number (null: it was not
        // finite) is kept as NaN, so a diverged evaluation is shown, not lost.
        if (const auto loss = body.find("loss");
            loss != body.end() && (loss->is_number() || loss->is_null()))
            m_evals.push_back({integer(body, "step", 0),
                loss->is_null() ? std::numeric_limits<double>::quiet_NaN() : loss->get<double>(),
                event.timeSeconds});
        break;
    case EventType::Checkpoint:
        m_lastCheckpointStep = integer(body, "step", m_lastCheckpointStep);
        break;
    case EventType::Log:
        m_exportPeakBytes =
            std::max(m_exportPeakBytes, integer(body, "export_peak_resident_bytes", -1));
        addMessage(event.typeName, text(body, "message"));
        break;
    case EventType::Warning:
    case EventType::Error:
        addMessage(event.typeName, text(body, "message"));
        break;
    case EventType::RunEnd:
        m_end = RunEndInfo{text(body, "status"), text(body, "message"), integer(body, "steps", -1),
            event.timeSeconds};
        break;
    case EventType::Unknown:
        break;
    }
}

void RunHistory::addUnreadableLine(const std::string& what)
{
    addMessage("unreadable", what);
}

void RunHistory::addMessage(const std::string& level, const std::string& text)
{
    if (m_messages.size() == kMaxMessages) {
        m_messages.pop_front();
        ++m_droppedMessages;
    }
    m_messages.push_back({level, lastStep(), common::clipText(text, kMaxMessageBytes)});
}

std::string RunHistory::droppedMessagesText() const
{
    if (m_droppedMessages == 0)
        return {};
    return "... and " + std::to_string(m_droppedMessages)
        + " earlier message(s) not kept (the latest " + std::to_string(kMaxMessages) + " are)";
}

void RunHistory::applyStart(const Event& event)
{
    const json& body = event.body;
    RunStartInfo info;
    info.runId = text(body, "run_id");
    info.worldSize = static_cast<int>(integer(body, "world_size", 1, 1, 1 << 24));
    info.globalBatch = integer(body, "global_batch", -1);
    info.totalSteps = integer(body, "total_steps", -1);
    info.resumedFromStep = integer(body, "resumed_from_step", -1);
    if (const auto load = body.find("load"); load != body.end() && load->is_object())
        info.loadPeakBytes = integer(*load, "peak_resident_bytes", -1);
    info.sharding = text(body, "sharding");
    info.host = text(body, "host");
    info.pid = integer(body, "pid", -1);
    info.nodes = static_cast<int>(integer(body, "nodes", 1));
    // A resumed run keeps the start of its first segment: durations and
    // wall-time axes count from there.
    info.timeSeconds = m_start ? m_start->timeSeconds : event.timeSeconds;
    if (const auto config = body.find("config"); config != body.end() && config->is_object()) {
        info.config = *config;
        info.method = text(*config, "method");
        // A preference-tuned run reads "dpo (lora)": its objective tells
        // it from a supervised run of the same method.
        if (const std::string objective = text(*config, "objective");
            !objective.empty() && objective != "sft")
            info.method = objective + " (" + info.method + ")";
    }
    if (const auto prediction = body.find("prediction"); prediction != body.end())
        info.prediction = RunPrediction::fromJson(*prediction);
    if (const auto model = body.find("model"); model != body.end() && model->is_object()) {
        info.modelName = text(*model, "name");
        info.paramsTotal = integer(*model, "params_total", -1);
        info.paramsTrainable = integer(*model, "params_trainable", -1);
    }
    m_start = info;
    m_end.reset(); // a resumed run is running again
    if (info.resumedFromStep >= 0)
        purgeFrom(info.resumedFromStep + 1);
}

void RunHistory::applyStep(const Event& event)
{
    const StepRecord record = StepRecord::fromEvent(event);
    // A step at or before the last one: the run went back (resumed from an
    // older checkpoint than its last step).
    if (!m_steps.empty() && record.step <= m_steps.back().step)
        purgeFrom(record.step);
    m_steps.push_back(record);
    applyRouting(event, record.step);
}

void RunHistory::applyRouting(const Event& event, int64_t step)
{
    StepRouting routing = readStepRouting(event.body, step);
    for (const std::string& problem : routing.problems)
        addMessage("unreadable", problem);
    if (routing.loads) {
        m_routing.push_back(routingPoint(*routing.loads, routing.routerAuxLoss));
        m_latestLoads = std::move(routing.loads);
        m_hasExpertRouting = true;
    } else if (routing.routerAuxLoss >= 0) {
        m_routing.push_back({.step = step, .routerAuxLoss = routing.routerAuxLoss});
    }
}

void RunHistory::purgeFrom(int64_t step)
{
    const auto firstStep = std::find_if(
        m_steps.begin(), m_steps.end(), [step](const StepRecord& r) { return r.step >= step; });
    m_steps.erase(firstStep, m_steps.end());
    std::erase_if(m_evals, [step](const EvalPoint& e) { return e.step >= step; });
    std::erase_if(m_routing, [step](const RoutingPoint& p) { return p.step >= step; });
    if (m_latestLoads && m_latestLoads->step >= step)
        m_latestLoads.reset();
    ++m_purges;
}

} // namespace tb::metrics
