#include "train/training_run.h"

#include "common/units.h"
#include "train/checkpoint.h"
#include "train/llama_model.h"
#include "train/merged_export.h"
#include "train/peft_adapter.h"
#include "train/process_memory.h"
#include "train/training_device.h"

#include <cmath>
#include <filesystem>

namespace tb::train {

using common::Error;
using nlohmann::json;

EvalLossResult TrainingRun::evaluateValidation()
{
    const auto microBatch = static_cast<std::size_t>(m_config.training.microBatch);
    std::span<const data::TokenizedExample> rows = m_session->data.validation;
    if (!m_parallel)
        return evaluateRows(*m_session->model, rows, microBatch, m_session->padId);
    // Gathered parameters make every forward a collective: then every rank
    // runs every row. Otherwise each rank takes a contiguous share.
    if (!m_session->parameters->shard().parameters) {
        const auto world = static_cast<std::size_t>(m_context.worldSize());
        const auto rank = static_cast<std::size_t>(m_context.rank());
        const std::size_t begin = rows.size() * rank / world;
        const std::size_t end = rows.size() * (rank + 1) / world;
        rows = rows.subspan(begin, end - begin);
    }
    EvalLossResult local = evaluateRows(*m_session->model, rows, microBatch, m_session->padId);
    m_parallel->releaseGathered();
    if (m_session->parameters->shard().parameters)
        return local;
    const double sum = m_parallel->sumOverWorld(
        local.lossTokens > 0 ? local.meanLoss * static_cast<double>(local.lossTokens) : 0.0);
    EvalLossResult global;
    global.lossTokens =
        static_cast<std::int64_t>(m_parallel->sumOverWorld(static_cast<double>(local.lossTokens)));
    global.meanLoss =
        global.lossTokens > 0 ? sum / static_cast<double>(global.lossTokens) : std::nan("");
    return global;
}

void TrainingRun::evaluate()
{
    if (m_session->data.validation.empty())
        return;
    if (m_config.isPreferenceTuning()) {
        evaluatePreference();
        return;
    }
    const EvalLossResult result = evaluateValidation();
    m_lastEvalStep = m_step;
    if (!m_outcome.firstEvalLoss && m_step == 0)
        m_outcome.firstEvalLoss = result.meanLoss;
    m_outcome.lastEvalLoss = result.meanLoss;
    emit(metrics::EventType::Eval,
        {{"step", m_step},
            {"loss", std::isfinite(result.meanLoss) ? json(result.meanLoss) : json(nullptr)},
            {"perplexity", std::exp(result.meanLoss)}, {"tokens", result.lossTokens}});
    TrainerProgress item;
    item.kind = TrainerProgress::Kind::Eval;
    item.step = m_step;
    item.totalSteps = m_totalSteps;
    item.loss = result.meanLoss;
    progress(item);
}

// DPO's validation: the pair loss and TRL's figures over the validation
// pairs (one process: objective dpo refuses more).
void TrainingRun::evaluatePreference()
{
    const PreferenceEval result = evaluateDpo(*m_session->model, m_session->data.validation,
        static_cast<std::size_t>(m_config.training.microBatch), m_session->padId,
        DpoLossSettings::fromConfig(m_config.dpo));
    m_lastEvalStep = m_step;
    if (!m_outcome.firstEvalLoss && m_step == 0)
        m_outcome.firstEvalLoss = result.loss;
    m_outcome.lastEvalLoss = result.loss;
    emit(metrics::EventType::Eval,
        {{"step", m_step}, {"loss", std::isfinite(result.loss) ? json(result.loss) : json(nullptr)},
            {"pairs", result.pairs}, {"tokens", result.tokens},
            {"dpo", preferenceFields(result.figures)}});
    TrainerProgress item;
    item.kind = TrainerProgress::Kind::Eval;
    item.step = m_step;
    item.totalSteps = m_totalSteps;
    item.loss = result.loss;
    item.message = "validation DPO loss " + common::formatFixed(result.loss, 4) + ", margin "
        + common::formatFixed(result.figures.rewardsMargin, 4) + ", accuracy "
        + common::formatFixed(100.0 * result.figures.rewardsAccuracy, 1) + " % over "
        + std::to_string(result.pairs) + " pairs";
    progress(item);
}

ParameterValues TrainingRun::masterValues()
{
    if (m_parallel)
        return m_parallel->gatherMasterValues(isRankZero());
    ParameterValues values;
    for (const auto& slot : m_session->parameters->segments())
        values.emplace(slot.name, m_session->parameters->masterView(slot));
    return values;
}

common::Status TrainingRun::checkpoint()
{
    if (m_lastCheckpointStep == m_step)
        return common::Ok{};
    const std::string dir = m_config.output.dir + "/checkpoints";
    TrainerState state;
    state.step = m_step;
    state.dataPosition = m_batches->position();
    if (m_session->dropoutGenerator) {
        std::lock_guard<std::mutex> lock(m_session->dropoutGenerator->mutex());
        state.dropoutGeneratorState = m_session->dropoutGenerator->get_state();
        state.dropoutGeneratorDevice = generatorDeviceType(*m_session->dropoutGenerator);
    }
    state.tokensSeen = m_tokensSeen;
    state.trainSeconds = m_trainSeconds;
    state.method = config::toString(m_config.method);
    state.configYaml = config::toYaml(m_config);
    std::function<common::Status(const std::string&)> extra;
    if (m_config.usesLora()) {
        // A collective under sharding: every rank gathers, rank 0 writes.
        ParameterValues values = masterValues();
        extra = [this, values](const std::string& staging) {
            return savePeftAdapter(
                *m_session->model, m_session->lora, staging + "/adapter", m_config.model, values);
        };
    }
    auto bytes = writeCheckpoint(
        dir, *m_session->parameters, *m_session->optimizer, state, checkpointRank(), extra);
    if (!bytes)
        return bytes.error();
    if (isRankZero())
        pruneCheckpoints(dir, m_config.output.keepLast);
    if (m_context.distributed())
        m_context.barrier(); // nobody starts the next checkpoint while rank 0 prunes
    m_lastCheckpointStep = m_step;
    m_outcome.lastCheckpoint = dir + "/" + checkpointFolderName(m_step);
    const std::string relative = "checkpoints/" + checkpointFolderName(m_step);
    emit(metrics::EventType::Checkpoint, {{"step", m_step}, {"path", relative}, {"bytes", *bytes}});
    m_events->sync();
    TrainerProgress item;
    item.kind = TrainerProgress::Kind::Checkpoint;
    item.step = m_step;
    item.message = relative;
    progress(item);
    return common::Ok{};
}

namespace {

std::string bytesOrUnknown(std::int64_t bytes)
{
    return bytes >= 0 ? common::formatBytes(static_cast<double>(bytes)) : "unknown";
}

} // namespace

// A log line with the export's peaks, in words and as numbers
// (docs/EVENTS.md): every rank says what the export cost it.
void TrainingRun::emitExportPeaks(const std::string& what)
{
    const std::int64_t resident = processMemory().peakResidentBytes;
    std::string text = what + " (peak resident memory of the export " + bytesOrUnknown(resident);
    json fields = {{"export_peak_resident_bytes", resident}};
    const DeviceMemory device = deviceMemory(m_session->device);
    if (device.peakAllocatedBytes >= 0) {
        text += ", GPU allocated " + bytesOrUnknown(device.peakAllocatedBytes);
        fields["export_device_peak_bytes"] = device.peakAllocatedBytes;
    }
    fields["message"] = text + ")";
    emit(metrics::EventType::Log, std::move(fields));
}

UnitGather TrainingRun::unitGather()
{
    const bool keep = isRankZero();
    return {[this, keep](int id) { return m_parallel->gatherUnit(id, keep); },
        [this](int id) { m_parallel->releaseUnit(id); }};
}

common::Status TrainingRun::exportResults()
{
    const config::ExportKind kind = m_config.output.exportKind;
    const bool adapter = m_config.usesLora()
        && (kind == config::ExportKind::Adapter || kind == config::ExportKind::Both);
    const bool merged = kind == config::ExportKind::Merged || kind == config::ExportKind::Both;
    // The export's own peaks, for its log line (training's are past).
    releaseFreedHeap();
    resetPeakResidentMemory();
    resetDevicePeakMemory(m_session->device);
    // Sharded states are exported a unit at a time: every rank gathers each
    // unit in turn, rank 0 writes it and drops it (docs/DISTRIBUTED.md).
    const bool streamed = m_parallel && m_session->parameters->shard().count > 1;
    const ParameterValues values = adapter || !streamed ? masterValues() : ParameterValues{};
    if (merged && !isRankZero() && streamed)
        joinMergedExport(*m_session->model, unitGather());
    if (!isRankZero()) {
        emitExportPeaks("joined the export");
        return common::Ok{}; // rank 0 writes the exports
    }
    if (adapter) {
        const std::string dir = m_config.output.dir + "/adapter";
        if (auto status =
                savePeftAdapter(*m_session->model, m_session->lora, dir, m_config.model, values);
            !status)
            return status;
        m_outcome.adapterDir = dir;
    }
    if (merged) {
        const std::string dir = m_config.output.dir + "/merged";
        const ComputeDType storeAs = storageDTypeOf(m_session->model->config().torchDtype);
        const UnitGather units = unitGather();
        if (auto status = exportMergedModel(*m_session->model, dir, m_config.model,
                m_config.tokenizer, storeAs, values, streamed ? &units : nullptr);
            !status)
            return status;
        m_outcome.mergedDir = dir;
    }
    for (const std::string& dir : {m_outcome.adapterDir, m_outcome.mergedDir}) {
        if (dir.empty())
            continue;
        emitExportPeaks("exported " + dir);
        TrainerProgress item;
        item.kind = TrainerProgress::Kind::Export;
        item.message = dir;
        progress(item);
    }
    return common::Ok{};
}

} // namespace tb::train
