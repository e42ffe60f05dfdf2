#include "train/trainer.h"

#include "config/config_writer.h"
#include "data/random.h"
#include "metrics/event_writer.h"
#include "metrics/step_record.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"
#include "train/llama_model.h"
#include "train/lr_schedule.h"
#include "train/merged_export.h"
#include "train/model_loader.h"
#include "train/parallel_context.h"
#include "train/peft_adapter.h"
#include "train/process_memory.h"
#include "train/staging_directory.h"
#include "train/train_step.h"
#include "train/training_session.h"

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <thread>
#include <unistd.h>

namespace tb::train {

namespace fs = std::filesystem;
using common::Error;
using nlohmann::json;

std::string_view runStatusName(RunStatus status)
{
    switch (status) {
    case RunStatus::Completed:
        return "completed";
    case RunStatus::Stopped:
        return "stopped";
    case RunStatus::Failed:
        break;
    }
    return "failed";
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string hostName()
{
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

// One run of the loop: owns the session, the event stream and the counters.
class TrainingRun {
public:
    TrainingRun(std::unique_ptr<TrainingSession> session, const TrainerOptions& options,
        std::unique_ptr<metrics::EventWriter> events, ParallelContext& parallel)
        : m_session(std::move(session))
        , m_options(options)
        , m_config(m_session->config)
        , m_events(std::move(events))
        , m_context(parallel)
    {
        m_outcome.runDir = m_config.output.dir;
        if (m_context.distributed())
            m_parallel = std::make_unique<DataParallel>(*m_session->model, *m_session->parameters,
                m_context.sharding(), m_context.groups());
    }

    common::Result<TrainOutcome> run(const std::string& resumeDir);

private:
    bool stopRequested() const
    {
        const bool here = m_options.stopRequested && m_options.stopRequested->load();
        // Every rank stops at the same step, when any rank was asked to.
        return m_parallel ? m_parallel->sumOverWorld(here ? 1.0 : 0.0) > 0.0 : here;
    }
    bool isRankZero() const { return m_context.rank() == 0; }
    CheckpointRank checkpointRank() const
    {
        CheckpointRank who;
        who.rank = m_context.rank();
        who.worldSize = m_context.worldSize();
        who.writesShard = m_context.writesShard();
        who.shardCount = m_session->parameters->shard().count;
        if (m_context.distributed())
            who.barrier = [this] { m_context.barrier(); };
        return who;
    }
    void emit(metrics::EventType type, json fields) { m_events->write(type, std::move(fields)); }
    void progress(TrainerProgress item)
    {
        if (m_options.progress)
            m_options.progress(item);
    }
    void warn(const std::string& message)
    {
        emit(metrics::EventType::Warning, {{"message", message}});
        TrainerProgress item;
        item.kind = TrainerProgress::Kind::Warning;
        item.message = message;
        progress(item);
    }
    common::Status resume(const std::string& dir);
    void writeRunStart(bool resumed);
    EvalLossResult evaluateValidation();
    void evaluate();
    void addStateFields(json& fields);
    common::Status checkpoint();
    common::Status exportResults();
    ParameterValues masterValues();
    void finish(RunStatus status, const std::string& message);
    TrainOutcome fail(const std::string& message, Clock::time_point loopStart)
    {
        emit(metrics::EventType::Error, {{"message", message}});
        finish(RunStatus::Failed, message);
        m_outcome.seconds = secondsSince(loopStart);
        return m_outcome;
    }

    std::unique_ptr<TrainingSession> m_session;
    const TrainerOptions& m_options;
    const config::RunConfig& m_config;
    std::unique_ptr<metrics::EventWriter> m_events;
    ParallelContext& m_context;
    std::unique_ptr<DataParallel> m_parallel; // when distributed
    dist::CommunicationStats m_lastCommunication;
    TrainOutcome m_outcome;
    std::unique_ptr<data::BatchIterator> m_batches;
    std::int64_t m_step = 0;
    std::int64_t m_totalSteps = 0;
    std::int64_t m_tokensSeen = 0;
    double m_trainSeconds = 0.0; // over every process of the run
    std::int64_t m_lastCheckpointStep = -1;
    std::int64_t m_lastEvalStep = -1;
    data::DataPosition m_startPosition;
};

common::Status TrainingRun::resume(const std::string& dir)
{
    auto state =
        readCheckpoint(dir, *m_session->parameters, *m_session->optimizer, checkpointRank());
    if (!state)
        return state.error();
    if (state->method != config::toString(m_config.method))
        return Error::at(dir, "trainer_state.json",
            "the checkpoint is of a " + state->method + " run, this config trains "
                + std::string(config::toString(m_config.method)));
    if (state->configYaml != config::toYaml(m_config))
        warn("the config differs from the one the checkpoint was written with; the run "
             "continues with the new one (an exact continuation needs the same config)");
    m_step = state->step;
    m_tokensSeen = state->tokensSeen;
    m_trainSeconds = state->trainSeconds;
    m_lastCheckpointStep = m_step;
    m_startPosition = state->dataPosition;
    for (const std::string& warning : state->warnings)
        warn(warning);
    if (m_parallel)
        m_parallel->afterOptimizerStep(); // the replicated values from the loaded shards
    if (state->dropoutGeneratorState.defined() && m_session->dropoutGenerator) {
        std::lock_guard<std::mutex> lock(m_session->dropoutGenerator->mutex());
        m_session->dropoutGenerator->set_state(state->dropoutGeneratorState);
    }
    m_outcome.lastCheckpoint = dir;
    return common::Ok{};
}

void TrainingRun::writeRunStart(bool resumed)
{
    const config::TrainingConfig& t = m_config.training;
    const int world = m_context.worldSize();
    json fields = {{"run_id", m_config.name}, {"world_size", world},
        {"config", config::toJson(m_config)},
        {"model",
            {{"name", fs::path(m_config.model).filename().string()},
                {"params_total", m_session->totalParameters},
                {"params_trainable", m_session->trainableParameters}}},
        {"global_batch", t.microBatch * t.gradAccum * world}, {"host", hostName()},
        {"total_steps", m_totalSteps}, {"threads", computeThreads()},
        {"train_rows", m_session->data.train.size()},
        {"validation_rows", m_session->data.validation.size()}};
    if (resumed)
        fields["resumed_from_step"] = m_step;
    if (m_context.distributed()) {
        fields["sharding"] = std::string(config::toString(m_context.sharding()));
        fields["local_rank"] = m_context.environment().localRank;
        fields["nodes"] = m_context.environment().nodeCount();
        // What travels: gradients are summed in fp32, parameters gathered in
        // the compute dtype (docs/DISTRIBUTED.md).
        fields["gradient_communication_dtype"] = "float32";
        fields["parameter_communication_dtype"] =
            std::string(config::toString(m_config.precision)) == "fp32" ? "float32" : "bfloat16";
    }
    if (m_session->quantizedBytes > 0)
        fields["nf4_bytes"] = m_session->quantizedBytes;
    emit(metrics::EventType::RunStart, std::move(fields));
}

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

// What this rank holds of the training state, and what it sent (docs/EVENTS.md).
void TrainingRun::addStateFields(json& fields)
{
    const ResidentStateBytes bytes = m_session->parameters->peakResidentBytes();
    fields["state_bytes"] = {{"parameters", bytes.parameters}, {"gradients", bytes.gradients},
        {"master", bytes.master}, {"optimizer", m_session->optimizer->residentBytes()}};
    m_session->parameters->resetPeakResidentBytes();
    if (m_parallel) {
        const dist::CommunicationStats now = m_parallel->stats();
        fields["comm_bytes"] = now.totalBytes() - m_lastCommunication.totalBytes();
        fields["comm_collectives"] = now.collectives - m_lastCommunication.collectives;
        m_lastCommunication = now;
    }
}

void TrainingRun::evaluate()
{
    if (m_session->data.validation.empty())
        return;
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

ParameterValues TrainingRun::masterValues()
{
    if (m_parallel)
        return m_parallel->gatherMasterValues();
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

common::Status TrainingRun::exportResults()
{
    const config::ExportKind kind = m_config.output.exportKind;
    const bool adapter = m_config.usesLora()
        && (kind == config::ExportKind::Adapter || kind == config::ExportKind::Both);
    const bool merged = kind == config::ExportKind::Merged || kind == config::ExportKind::Both;
    const ParameterValues values = masterValues();
    if (!isRankZero())
        return common::Ok{}; // rank 0 writes the exports
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
        if (auto status = exportMergedModel(
                *m_session->model, dir, m_config.model, m_config.tokenizer, storeAs, values);
            !status)
            return status;
        m_outcome.mergedDir = dir;
    }
    for (const std::string& dir : {m_outcome.adapterDir, m_outcome.mergedDir}) {
        if (dir.empty())
            continue;
        emit(metrics::EventType::Log, {{"message", "exported " + dir}});
        TrainerProgress item;
        item.kind = TrainerProgress::Kind::Export;
        item.message = dir;
        progress(item);
    }
    return common::Ok{};
}

void TrainingRun::finish(RunStatus status, const std::string& message)
{
    m_outcome.status = status;
    m_outcome.message = message;
    m_outcome.steps = m_step;
    json fields = {{"status", std::string(runStatusName(status))}, {"steps", m_step}};
    if (!message.empty())
        fields["message"] = message;
    emit(metrics::EventType::RunEnd, std::move(fields));
    m_events->sync();
}

common::Result<TrainOutcome> TrainingRun::run(const std::string& resumeDir)
{
    const config::TrainingConfig& t = m_config.training;
    if (!resumeDir.empty()) {
        if (auto status = resume(resumeDir); !status)
            return status.error();
    }
    data::SamplerOptions sampler;
    sampler.datasetSize = m_session->data.train.size();
    sampler.worldSize = m_context.worldSize();
    sampler.rank = m_context.rank();
    sampler.shuffle = true;
    sampler.seed = data::deriveSeed(t.seed, kShuffleStream);
    m_batches = std::make_unique<data::BatchIterator>(m_session->data.train, sampler,
        data::BatchOptions{static_cast<std::size_t>(t.microBatch), m_session->padId, 0},
        m_startPosition);
    const auto microBatches = static_cast<std::int64_t>(m_batches->batchesPerEpoch()) * t.epochs;
    m_totalSteps =
        t.maxSteps > 0 ? t.maxSteps : std::max<std::int64_t>(1, microBatches / t.gradAccum);
    m_outcome.totalSteps = m_totalSteps;
    const LrSchedule schedule(
        t.schedule, t.learningRate, warmupStepsFor(t, m_totalSteps), m_totalSteps);

    writeRunStart(!resumeDir.empty());
    // Step events report the peak of training, not of loading (a bf16 run
    // reads the fp32 weights first).
    resetPeakResidentMemory();
    const auto loopStart = Clock::now();
    try {
        if (resumeDir.empty())
            evaluate();
        const std::int64_t firstStep = m_step;
        while (m_step < m_totalSteps) {
            if (stopRequested()) {
                if (auto status = checkpoint(); !status)
                    return fail(status.error().toString(), loopStart);
                finish(RunStatus::Stopped, "stopped on request at step " + std::to_string(m_step));
                m_outcome.seconds = secondsSince(loopStart);
                return m_outcome;
            }
            const auto stepStart = Clock::now();
            std::vector<data::Batch> batches;
            for (int i = 0; i < t.gradAccum; ++i)
                batches.push_back(m_batches->next());
            const double rate = schedule.rateAt(m_step + 1);
            const StepResult result = trainStep(*m_session->model, *m_session->parameters,
                *m_session->optimizer, batches, rate, t.maxGradNorm, m_parallel.get());
            ++m_step;
            const double stepSeconds = secondsSince(stepStart);
            m_trainSeconds += stepSeconds;
            m_tokensSeen += result.globalTokens;
            // Rank 0 reports the job's figures, the others their own.
            const std::int64_t stepTokens = isRankZero() ? result.globalTokens : result.tokens;
            m_outcome.lastLoss = result.loss;
            if (!std::isfinite(result.loss) || !std::isfinite(result.gradNorm)) {
                const std::string message = "the loss or gradient norm became non-finite at step "
                    + std::to_string(m_step) + " (loss " + std::to_string(result.loss)
                    + ", gradient norm " + std::to_string(result.gradNorm) + ")";
                return fail(message, loopStart);
            }
            const ProcessMemory memory = processMemory();
            if (m_step % t.logEvery == 0 || m_step == m_totalSteps) {
                metrics::StepRecord record;
                record.step = m_step;
                record.loss = result.loss;
                record.learningRate = rate;
                record.gradNorm = result.gradNorm;
                record.tokens = stepTokens;
                record.samples = result.samples;
                record.stepSeconds = stepSeconds;
                record.tokensPerSecond = static_cast<double>(stepTokens) / stepSeconds;
                record.memAllocatedBytes = memory.residentBytes;
                record.memPeakBytes = memory.peakResidentBytes;
                json fields = record.toFields();
                addStateFields(fields);
                emit(metrics::EventType::Step, std::move(fields));
            }
            TrainerProgress item;
            item.kind = TrainerProgress::Kind::Step;
            item.step = m_step;
            item.totalSteps = m_totalSteps;
            item.loss = result.loss;
            item.learningRate = rate;
            item.gradNorm = result.gradNorm;
            item.stepSeconds = stepSeconds;
            item.tokensPerSecond = static_cast<double>(stepTokens) / stepSeconds;
            item.etaSeconds = secondsSince(loopStart) / static_cast<double>(m_step - firstStep)
                * static_cast<double>(m_totalSteps - m_step);
            item.residentBytes = memory.residentBytes;
            progress(item);

            if (t.evalEvery > 0 && m_step % t.evalEvery == 0)
                evaluate();
            if (m_config.output.checkpointEvery > 0 && m_step % m_config.output.checkpointEvery == 0
                && m_step < m_totalSteps) {
                if (auto status = checkpoint(); !status)
                    return fail(status.error().toString(), loopStart);
            }
        }
        if (m_lastEvalStep != m_step)
            evaluate();
        if (auto status = checkpoint(); !status)
            return fail(status.error().toString(), loopStart);
        if (auto status = exportResults(); !status)
            return fail(status.error().toString(), loopStart);
    } catch (const std::exception& e) {
        return fail(std::string("training failed: ") + e.what(), loopStart);
    }
    m_outcome.seconds = secondsSince(loopStart);
    finish(RunStatus::Completed, {});
    return m_outcome;
}

} // namespace

common::Result<TrainOutcome> runTraining(
    const config::RunConfig& config, const TrainerOptions& options)
{
    setComputeThreads(options.threads > 0
            ? options.threads
            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    const std::string& runDir = config.output.dir;
    const std::string checkpointsDir = runDir + "/checkpoints";
    std::string resumeDir = options.resumeFrom;
    if (options.resume && resumeDir.empty()) {
        const auto all = listCheckpoints(checkpointsDir);
        if (all.empty())
            return Error::at(checkpointsDir, "", "no checkpoint to resume from",
                "run without --resume to start the run");
        resumeDir = all.back();
    }
    if (resumeDir.empty() && !listCheckpoints(checkpointsDir).empty())
        return Error::at(runDir, "", "the run folder already holds checkpoints",
            "pass --resume to continue that run, or choose another output.dir");

    auto joined = ParallelContext::join(config);
    if (!joined)
        return joined.error();
    ParallelContext context = std::move(joined).value();
    if (context.rank() == 0) {
        std::error_code error;
        fs::create_directories(checkpointsDir, error);
        if (error)
            return Error::at(checkpointsDir, "", "cannot create the folder: " + error.message());
        removeStaleStagingDirectories(runDir);
        removeStaleStagingDirectories(checkpointsDir);
        if (auto status = config::saveRunConfig(runDir + "/config.yaml", config); !status)
            return status.error();
    }
    context.barrier(); // the folder exists for every rank
    const int rank = context.rank();
    auto events = metrics::EventWriter::open(runDir
            + (rank == 0 ? std::string("/events.jsonl")
                         : "/events.rank" + std::to_string(rank) + ".jsonl"),
        rank);
    if (!events)
        return events.error();

    auto session = buildSession(config, options, context.shardSpec(), rank);
    if (!session && options.stopRequested && options.stopRequested->load()) {
        // Asked to stop while loading or preparing data: nothing was trained.
        (*events)->write(metrics::EventType::RunEnd,
            {{"status", "stopped"}, {"message", "stopped on request before training"},
                {"steps", 0}});
        (*events)->sync();
        TrainOutcome outcome;
        outcome.status = RunStatus::Stopped;
        outcome.message = "stopped on request before training";
        outcome.runDir = runDir;
        return outcome;
    }
    if (!session) {
        (*events)->write(metrics::EventType::Error, {{"message", session.error().toString()}});
        (*events)->write(metrics::EventType::RunEnd,
            {{"status", "failed"}, {"message", session.error().toString()}, {"steps", 0}});
        (*events)->sync();
        return session.error();
    }
    TrainingRun run(std::move(session).value(), options, std::move(events).value(), context);
    return run.run(resumeDir);
}

} // namespace tb::train
