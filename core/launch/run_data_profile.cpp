#include "launch/run_data_profile.h"

#include "config/config_loader.h"
#include "data/batch.h"
#include "data/prepare_data.h"
#include "data/sampler.h"
#include "launch/run_plan.h"
#include "plan/cpu_device.h"
#include "tokenizer/tokenizer.h"

#include <algorithm>

namespace tb::launch {

namespace {

std::string filesOf(const config::DataConfig& data)
{
    std::string files;
    for (const std::string& file : data.trainFiles)
        files += (files.empty() ? "" : ", ") + file;
    return files;
}

} // namespace

plan::DataProfile profileRows(std::span<const data::TokenizedExample> rows,
    const config::RunConfig& config, int worldSize, std::string source)
{
    plan::DataProfile profile;
    profile.source = std::move(source);
    const int world = std::max(1, worldSize);
    data::BatchOptions batching{static_cast<std::size_t>(config.training.microBatch), 0, 0};
    // As the trainer batches DPO: micro_batch pairs, each a chosen and a
    // rejected row (train/training_run.cpp).
    batching.rowsPerSample = config.isPreferenceTuning() ? 2 : 1;
    for (int rank = 0; rank < world; ++rank) {
        data::BatchIterator batches(
            rows, data::trainingSampler(rows.size(), world, rank, config.training.seed), batching);
        for (std::size_t i = batches.batchesPerEpoch(); i > 0; --i) {
            const data::Batch batch = batches.next();
            profile.rows += static_cast<std::int64_t>(batch.batchSize);
            profile.tokens += static_cast<std::int64_t>(batch.tokens());
            profile.batchTokens +=
                static_cast<std::int64_t>(batch.batchSize * batch.sequenceLength);
            profile.longestRow =
                std::max(profile.longestRow, static_cast<int>(batch.sequenceLength));
            profile.peakLossTokens =
                std::max(profile.peakLossTokens, static_cast<std::int64_t>(batch.lossTokens()));
            ++profile.microBatches;
        }
    }
    return profile;
}

void applyDataProfile(
    plan::PlanInput& input, const config::RunConfig& config, plan::DataProfile profile)
{
    const config::TrainingConfig& t = config.training;
    input.epochs = double(std::max(1, t.epochs));
    if (t.maxSteps > 0 && profile.microBatches > 0)
        input.epochs = double(t.maxSteps) * t.gradAccum * input.gpusPerNode * input.nodes
            / double(profile.microBatches);
    input.data = std::move(profile);
}

common::Result<plan::DataProfile> profileRunData(const config::RunConfig& config, int worldSize)
{
    const common::Result<tokenizer::Tokenizer> tokenizer =
        tokenizer::Tokenizer::load(config.tokenizer);
    if (!tokenizer)
        return tokenizer.error();
    const common::Result<data::PreparedData> prepared = data::prepareData(config, *tokenizer);
    if (!prepared)
        return prepared.error();
    if (prepared->train.empty())
        return common::Error::at(filesOf(config.data), "",
            "no training example left after reading and tokenizing the data");
    return profileRows(prepared->train, config, worldSize, filesOf(config.data));
}

common::Result<plan::PlanInput> planInputOfRunFile(
    const std::string& path, const plan::PlanInput& base, bool ownData)
{
    const common::Result<config::RunConfig> run = config::loadRunConfig(path);
    if (!run)
        return run.error();
    const bool cpu = run->device == config::Device::Cpu;
    plan::PlanInput in = planInputOfRun(*run, 1, 1, cpu ? plan::kCpuDeviceId : base.gpu);
    if (!cpu)
        in.vmSize = base.vmSize;
    in.datasetSamples = base.datasetSamples;
    in.meanTokensPerSample = base.meanTokensPerSample;
    in.datasetTokens = base.datasetTokens;
    in.epochs = base.epochs;
    if (!ownData)
        return in;
    common::Result<plan::DataProfile> profile = profileRunData(*run, 1);
    if (!profile)
        return profile.error();
    applyDataProfile(in, *run, std::move(profile.value()));
    return in;
}

} // namespace tb::launch
