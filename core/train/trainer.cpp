#include "train/trainer.h"

#include "launch/local_launcher.h"
#include "train/checkpoint.h"
#include "train/model_loader.h"
#include "train/staging_directory.h"
#include "train/training_device.h"
#include "train/training_run.h"

#include <cstdlib>
#include <filesystem>
#include <optional>

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

common::Result<int> computeThreadsFor(
    const TrainerOptions& options, const dist::RankEnvironment& environment)
{
    if (options.threads > 0)
        return options.threads;
    const char* omp = std::getenv("OMP_NUM_THREADS");
    return launch::rankComputeThreads(omp ? std::optional<std::string>(omp) : std::nullopt,
        launch::usableCpuCount(), environment.localWorldSize);
}

common::Result<TrainOutcome> setUpAndRun(
    const config::RunConfig& config, const TrainerOptions& options)
{
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
    if (options.exportOnly && resumeDir.empty())
        return Error::at(
            runDir, "", "--export-only needs a checkpoint", "pass --resume or --resume-from DIR");
    if (resumeDir.empty() && !listCheckpoints(checkpointsDir).empty())
        return Error::at(runDir, "", "the run folder already holds checkpoints",
            "pass --resume to continue that run, or choose another output.dir");

    const auto environment = dist::readRankEnvironment();
    if (!environment)
        return environment.error();
    if (auto threads = computeThreadsFor(options, *environment); threads)
        setComputeThreads(*threads);
    else
        return threads.error();
    const auto device = selectTrainingDevice(config, environment->localRank);
    if (!device)
        return device.error();
    auto joined = ParallelContext::join(config, *device);
    if (!joined)
        return joined.error();
    ParallelContext context = std::move(joined).value();
    std::vector<std::string> restored;
    if (context.rank() == 0) {
        std::error_code error;
        fs::create_directories(checkpointsDir, error);
        if (error)
            return Error::at(checkpointsDir, "", "cannot create the folder: " + error.message());
        for (const std::string& dir : {runDir, checkpointsDir})
            for (std::string& path : removeStaleStagingDirectories(dir))
                restored.push_back(std::move(path));
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
    for (const std::string& path : restored) {
        const std::string message = "put " + path
            + " back: a process replacing it was killed before the new folder took its place";
        (void)(*events)->write(metrics::EventType::Warning, {{"message", message}});
        if (options.progress)
            options.progress({.kind = TrainerProgress::Kind::Warning, .message = message});
    }

    auto session = buildSession(config, options, context.shardSpec(), rank, *device);
    if (!session && options.stopRequested && options.stopRequested->load()) {
        // Asked to stop while loading or preparing data: nothing was trained.
        if (common::Status written = (*events)->write(metrics::EventType::RunEnd,
                {{"status", "stopped"}, {"message", "stopped on request before training"},
                    {"steps", 0}});
            !written)
            return written.error();
        (*events)->sync();
        TrainOutcome outcome;
        outcome.status = RunStatus::Stopped;
        outcome.message = "stopped on request before training";
        outcome.runDir = runDir;
        return outcome;
    }
    if (!session) {
        // The setup's error is what the caller reports; events that cannot
        // be written as well add nothing to it.
        (void)(*events)->write(
            metrics::EventType::Error, {{"message", session.error().toString()}});
        (void)(*events)->write(metrics::EventType::RunEnd,
            {{"status", "failed"}, {"message", session.error().toString()}, {"steps", 0}});
        (*events)->sync();
        return session.error();
    }
    TrainingRun run(std::move(session).value(), options, std::move(events).value(), context);
    return run.run(resumeDir);
}

} // namespace

common::Result<TrainOutcome> runTraining(
    const config::RunConfig& config, const TrainerOptions& options)
{
    // The loop reports a failed collective as a failed run; one during
    // set-up or resume (before the loop) ends here, as an error.
    try {
        return setUpAndRun(config, options);
    } catch (const dist::CommunicationError& e) {
        return Error::at(config.output.dir, "", std::string("lost the other ranks: ") + e.what());
    }
}

} // namespace tb::train
