#include "train/training_run.h"

#include "common/local_machine.h"
#include "data/random.h"
#include "launch/run_data_profile.h"
#include "launch/run_prediction.h"
#include "metrics/step_record.h"
#include "plan/cpu_device.h"
#include "train/checkpoint.h"
#include "train/llama_model.h"
#include "train/lr_schedule.h"
#include "train/model_loader.h"
#include "train/process_memory.h"
#include "train/training_device.h"

#include <cmath>
#include <filesystem>
#include <unistd.h>

namespace tb::train {

namespace fs = std::filesystem;
using common::Error;
using nlohmann::json;

namespace {

// A GPU run reports its caching allocator (what torch.cuda reports); a CPU
// run, which has no allocator of its own, its resident memory.
void fillMemory(
    metrics::StepRecord& record, const ProcessMemory& process, const c10::Device& device)
{
    const DeviceMemory gpu = deviceMemory(device);
    if (!device.is_cuda()) {
        record.memAllocatedBytes = process.residentBytes;
        record.memPeakBytes = process.peakResidentBytes;
        return;
    }
    record.memAllocatedBytes = gpu.allocatedBytes;
    record.memPeakBytes = gpu.peakAllocatedBytes;
    record.memReservedBytes = gpu.reservedBytes;
    record.memPeakReservedBytes = gpu.peakReservedBytes;
}

} // namespace

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
    if (isRankZero()) {
        auto aside = setAsideCheckpointsAfter(m_config.output.dir + "/checkpoints", m_step);
        if (!aside)
            return aside.error();
        if (!aside->empty())
            warn("resumed at step " + std::to_string(m_step)
                + ", before the run's newest checkpoints: those after it were moved to " + *aside
                + " (kept; --resume and pruning now follow this timeline)");
    }
    if (m_parallel)
        m_parallel->afterOptimizerStep(); // the replicated values from the loaded shards
    if (state->dropoutGeneratorState.defined() && m_session->dropoutGenerator)
        restoreDropoutGenerator(*state);
    m_outcome.lastCheckpoint = dir;
    return common::Ok{};
}

void TrainingRun::restoreDropoutGenerator(const TrainerState& state)
{
    at::Generator& generator = *m_session->dropoutGenerator;
    const std::string here = generatorDeviceType(generator);
    std::lock_guard<std::mutex> lock(generator.mutex());
    if (state.dropoutGeneratorDevice == here) {
        generator.set_state(state.dropoutGeneratorState);
        return;
    }
    // A generator's state loads only into one of its own device type. The
    // stream is started again from the run's seed, this rank and the step,
    // so resuming twice from this checkpoint draws the same masks.
    generator.set_current_seed(dropoutSeed(m_config.training.seed, m_context.rank(), m_step));
    warn("the checkpoint's dropout generator state is of a " + state.dropoutGeneratorDevice
        + " generator and this run draws dropout on the " + here
        + ": dropout is reseeded from training.seed, the rank and step " + std::to_string(m_step)
        + " (the masks differ from an uninterrupted run; " + "everything else continues exactly)");
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
        {"global_batch", t.microBatch * t.gradAccum * world}, {"host", common::hostName()},
        {"pid", static_cast<long long>(::getpid())}, {"total_steps", m_totalSteps},
        {"threads", computeThreads()}, {"train_rows", m_session->data.train.size()},
        {"validation_rows", m_session->data.validation.size()},
        {"device", describeDevice(m_session->device)}};
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
    // What loading read and the most it held (docs/EVENTS.md).
    const TrainingSession::Load& load = m_session->load;
    fields["load"] = {{"sharded", load.sharded}, {"bytes_read", load.bytesRead},
        {"stored_bytes", load.storedBytes},
        {"peak_resident_bytes", m_loadMemory.peakResidentBytes}};
    if (m_loadDeviceMemory.peakAllocatedBytes >= 0)
        fields["load"]["device_peak_bytes"] = m_loadDeviceMemory.peakAllocatedBytes;
    const std::string unpredicted = addPrediction(fields);
    emit(metrics::EventType::RunStart, std::move(fields));
    if (!unpredicted.empty())
        warn("no planner prediction for this run: " + unpredicted);
}

// The planner's estimate for this run's own configuration, so what it
// measures can be held against it (docs/COMPARE.md): on this machine's CPU,
// or on the GPU preset CUDA's name for the rank's GPU finds. Returns why
// there is none, or empty.
std::string TrainingRun::addPrediction(json& fields)
{
    std::string deviceId = plan::kCpuDeviceId;
    if (!m_session->device.is_cpu()) {
        const common::Result<std::string> gpu =
            launch::gpuPresetOfDevice(cudaDeviceName(m_session->device));
        if (!gpu)
            return gpu.error().toString();
        deviceId = *gpu;
    }
    const int ranksPerNode = m_context.distributed() ? m_context.environment().localWorldSize : 1;
    const int nodes = m_context.distributed() ? m_context.environment().nodeCount() : 1;
    // Planned on the rows this run batches: its longest row, not seq_len,
    // sets the activations of a run that pads.
    const common::Result<metrics::RunPrediction> prediction =
        launch::predictRun(m_config, ranksPerNode, nodes, deviceId,
            launch::profileRows(
                m_session->data.train, m_config, ranksPerNode * nodes, "this run's rows"));
    if (!prediction)
        return prediction.error().toString();
    fields["prediction"] = prediction->toJson();
    return {};
}

// Settings that are valid but change nothing here, said once at the start.
void TrainingRun::warnAboutSettings()
{
    const config::DistributedConfig& d = m_config.distributed;
    if (!m_context.distributed() && d.sharding != config::Sharding::Ddp)
        warn("distributed.sharding " + std::string(config::toString(d.sharding))
            + " has no effect in a single process (WORLD_SIZE is 1)");
    for (const std::string& warning : m_context.joinWarnings())
        warn(warning);
    for (const std::string& warning : m_session->warnings)
        warn(warning);
}

// What this rank holds of the training state, and what it sent (docs/EVENTS.md).
void TrainingRun::addStateFields(json& fields)
{
    const ResidentStateBytes bytes = m_session->parameters->peakResidentBytes();
    fields["state_bytes"] = {{"parameters", bytes.parameters}, {"gradients", bytes.gradients},
        {"master", bytes.master}, {"optimizer", m_session->optimizer->residentBytes()},
        {"master_on_host", bytes.masterOnHost}};
    // The frozen base (LoRA, QLoRA): the most held in the step, and the part
    // that stays between uses (a shard under ZeRO-3 and FSDP).
    const FrozenShards* frozen = m_session->frozen.get();
    fields["state_bytes"]["frozen"] = frozen ? frozen->peakResidentBytes() : m_session->frozenBytes;
    fields["state_bytes"]["frozen_shard"] = frozen ? frozen->shardBytes() : m_session->frozenBytes;
    fields["state_bytes"]["frozen_shard_on_host"] = frozen && frozen->shardOnHost();
    if (m_session->frozen)
        m_session->frozen->resetPeakResidentBytes();
    m_session->parameters->resetPeakResidentBytes();
    if (m_parallel) {
        const dist::CommunicationStats now = m_parallel->stats();
        fields["comm_bytes"] = now.totalBytes() - m_lastCommunication.totalBytes();
        fields["comm_collectives"] = now.collectives - m_lastCommunication.collectives;
        m_lastCommunication = now;
    }
}

void TrainingRun::finish(RunStatus status, const std::string& message)
{
    m_outcome.status = status;
    m_outcome.message = message;
    m_outcome.steps = m_step;
    json fields = {{"status", std::string(runStatusName(status))}, {"steps", m_step}};
    if (!message.empty())
        fields["message"] = message;
    tryEmit(metrics::EventType::RunEnd, std::move(fields));
    m_events->sync();
    if (!m_eventsError.empty()) {
        m_outcome.status = RunStatus::Failed;
        m_outcome.message = m_eventsError;
    }
}

StepResult TrainingRun::runStep(const std::vector<data::Batch>& batches, double learningRate,
    std::optional<PreferenceFigures>& preference)
{
    TrainingSession& s = *m_session;
    const double maxGradNorm = m_config.training.maxGradNorm;
    if (!m_config.isPreferenceTuning())
        return trainStep(*s.model, *s.parameters, *s.optimizer, batches, learningRate, maxGradNorm,
            m_parallel.get());
    DpoStepResult dpo = trainDpoStep(*s.model, *s.parameters, *s.optimizer, batches,
        DpoLossSettings::fromConfig(m_config.dpo), learningRate, maxGradNorm);
    preference = dpo.figures;
    return dpo.step;
}

// TRL's DPO metrics under the step event's "dpo" (docs/EVENTS.md).
json TrainingRun::preferenceFields(const PreferenceFigures& figures)
{
    return {{"rewards_chosen", figures.rewardsChosen},
        {"rewards_rejected", figures.rewardsRejected}, {"rewards_margin", figures.rewardsMargin},
        {"rewards_accuracy", figures.rewardsAccuracy}, {"logps_chosen", figures.logpsChosen},
        {"logps_rejected", figures.logpsRejected},
        {"ref_logps_chosen", figures.referenceLogpsChosen},
        {"ref_logps_rejected", figures.referenceLogpsRejected}};
}

common::Result<TrainOutcome> TrainingRun::run(const std::string& resumeDir)
{
    // What fails outside the loop's own handling (an event that cannot be
    // written while resuming) ends the run as failed too; a lost rank during
    // the resume is the caller's to explain.
    const auto start = Clock::now();
    try {
        return resumeAndTrain(resumeDir);
    } catch (const dist::CommunicationError&) {
        throw;
    } catch (const std::exception& e) {
        return fail(e.what(), start);
    }
}

common::Result<TrainOutcome> TrainingRun::resumeAndTrain(const std::string& resumeDir)
{
    const config::TrainingConfig& t = m_config.training;
    if (m_config.isPreferenceTuning() && m_context.distributed())
        return Error::at(m_config.output.dir, "",
            "objective dpo trains in one process for now; this run has "
                + std::to_string(m_context.worldSize()) + " ranks",
            "run it without a launcher, or with --nproc 1");
    if (!resumeDir.empty()) {
        if (auto status = resume(resumeDir); !status)
            return status.error();
    }
    const data::SamplerOptions sampler = data::trainingSampler(
        m_session->data.train.size(), m_context.worldSize(), m_context.rank(), t.seed);
    data::BatchOptions batchOptions{static_cast<std::size_t>(t.microBatch), m_session->padId, 0};
    // A micro-batch of DPO holds micro_batch pairs: their chosen rows, then
    // their rejected rows.
    batchOptions.rowsPerSample = m_config.isPreferenceTuning() ? 2 : 1;
    m_batches = std::make_unique<data::BatchIterator>(
        m_session->data.train, sampler, batchOptions, m_startPosition);
    const auto microBatches = static_cast<std::int64_t>(m_batches->batchesPerEpoch()) * t.epochs;
    m_totalSteps =
        t.maxSteps > 0 ? t.maxSteps : std::max<std::int64_t>(1, microBatches / t.gradAccum);
    m_outcome.totalSteps = m_totalSteps;
    const LrSchedule schedule(
        t.schedule, t.learningRate, warmupStepsFor(t, m_totalSteps), m_totalSteps);

    // Step events report the peak of training, not of loading (a bf16 run
    // reads the fp32 weights first).
    m_loadMemory = processMemory();
    m_loadDeviceMemory = deviceMemory(m_session->device);
    releaseFreedHeap();
    resetPeakResidentMemory();
    resetDevicePeakMemory(m_session->device);
    const auto loopStart = Clock::now();
    try {
        writeRunStart(!resumeDir.empty());
        warnAboutSettings();
        if (m_options.exportOnly) {
            // Consolidates a (possibly sharded) checkpoint, at any world size.
            if (auto status = exportResults(); !status)
                return fail(status.error().toString(), loopStart);
            m_outcome.seconds = secondsSince(loopStart);
            finish(
                RunStatus::Completed, "exported the checkpoint of step " + std::to_string(m_step));
            return m_outcome;
        }
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
            std::optional<PreferenceFigures> preference;
            const StepResult result = runStep(batches, rate, preference);
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
                fillMemory(record, memory, m_session->device);
                json fields = record.toFields();
                addStateFields(fields);
                if (!result.expertTokens.empty())
                    fields["expert_tokens"] = result.expertTokens;
                if (std::isfinite(result.routerAuxLoss))
                    fields["router_aux_loss"] = result.routerAuxLoss;
                if (preference)
                    fields["dpo"] = preferenceFields(*preference);
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

} // namespace tb::train
