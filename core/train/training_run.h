#pragma once

// The fine-tuning loop's state and steps, shared by trainer.cpp (setup),
// training_run.cpp (the loop) and training_run_outputs.cpp (evaluation,
// checkpoints, exports). Internal to core/train.
#include "train/trainer.h"

#include "config/config_writer.h"
#include "data/batch.h"
#include "dist/communicator.h"
#include "metrics/event_writer.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"
#include "train/dpo_step.h"
#include "train/merged_export.h"
#include "train/parallel_context.h"
#include "train/peft_adapter.h"
#include "train/process_memory.h"
#include "train/train_step.h"
#include "train/training_device.h"
#include "train/training_session.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace tb::train {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
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
                m_context.sharding(), m_context.groups(), m_session->frozen.get());
    }

    common::Result<TrainOutcome> run(const std::string& resumeDir);

private:
    common::Result<TrainOutcome> resumeAndTrain(const std::string& resumeDir);
    // The checkpoint's dropout stream, or a reseeded one (with a warning)
    // when it was written on another device type.
    void restoreDropoutGenerator(const TrainerState& state);
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
    // A run whose events cannot be written (disk full, folder removed) must
    // not go on unseen: the first failed write ends it as failed, with the
    // reason; nothing more is written after it.
    void emit(metrics::EventType type, nlohmann::json fields)
    {
        if (!tryEmit(type, std::move(fields)))
            throw std::runtime_error(m_eventsError);
    }
    bool tryEmit(metrics::EventType type, nlohmann::json fields)
    {
        if (!m_eventsError.empty())
            return false;
        if (auto status = m_events->write(type, std::move(fields)); !status) {
            m_eventsError = "cannot write the run's events: " + status.error().toString();
            return false;
        }
        return true;
    }
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
    // One optimizer step of the run's objective; DPO's figures in `preference`.
    StepResult runStep(const std::vector<data::Batch>& batches, double learningRate,
        std::optional<PreferenceFigures>& preference);
    static nlohmann::json preferenceFields(const PreferenceFigures& figures);
    void writeRunStart(bool resumed);
    std::string addPrediction(nlohmann::json& fields);
    EvalLossResult evaluateValidation();
    void evaluate();
    void evaluatePreference();
    void addStateFields(nlohmann::json& fields);
    void warnAboutSettings();
    common::Status checkpoint();
    common::Status exportResults();
    void emitExportPeaks(const std::string& what);
    UnitGather unitGather(); // sharded exports: a unit at a time through m_parallel // "peak
                             // resident memory of the export ..." since exportResults began
    ParameterValues masterValues();
    void finish(RunStatus status, const std::string& message);
    TrainOutcome fail(const std::string& message, Clock::time_point loopStart)
    {
        tryEmit(metrics::EventType::Error, {{"message", message}});
        finish(RunStatus::Failed, message);
        m_outcome.seconds = secondsSince(loopStart);
        return m_outcome;
    }

    std::unique_ptr<TrainingSession> m_session;
    ProcessMemory m_loadMemory; // the setup's peak, before training resets it
    DeviceMemory m_loadDeviceMemory;
    const TrainerOptions& m_options;
    const config::RunConfig& m_config;
    std::unique_ptr<metrics::EventWriter> m_events;
    std::string m_eventsError; // the first failed write: the run ends there
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

} // namespace tb::train
