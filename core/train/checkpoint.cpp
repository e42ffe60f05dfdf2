#include "train/checkpoint.h"

#include "common/atomic_file.h"
#include "common/json_document.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"
#include "train/staging_directory.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <list>

namespace tb::train {

namespace fs = std::filesystem;
using common::Error;
using nlohmann::json;

namespace {

constexpr const char* kStateFile = "trainer_state.json";
constexpr int kFormat = 2;

safetensors::DType fileType(torch::ScalarType type)
{
    switch (type) {
    case torch::kBFloat16:
        return safetensors::DType::BF16;
    case torch::kHalf:
        return safetensors::DType::F16;
    case torch::kDouble:
        return safetensors::DType::F64;
    default:
        return safetensors::DType::F32;
    }
}

std::string rankFileName(int rank)
{
    char name[40];
    std::snprintf(name, sizeof name, "rank-%05d.safetensors", rank);
    return name;
}

// The rank file's metadata naming the device type of rng.dropout.
constexpr const char* kDropoutDeviceKey = "rng.dropout.device";

// A CUDA generator's state is its seed and offset, 16 bytes; a CPU
// generator's is its Mersenne Twister. For rank files from before the
// device was recorded.
std::string dropoutDeviceOf(const safetensors::SafetensorsFile& file, std::size_t bytes)
{
    const auto found = file.metadata().find(kDropoutDeviceKey);
    if (found != file.metadata().end())
        return found->second;
    return bytes == 16 ? "cuda" : "cpu";
}

std::span<const std::byte> bytesOf(const torch::Tensor& tensor)
{
    return {static_cast<const std::byte*>(tensor.data_ptr()), tensor.nbytes()};
}

json layoutJson(const FlatParameters& parameters)
{
    json units = json::array();
    for (const FlatParameters::Unit& unit : parameters.units()) {
        json segments = json::array();
        for (const size_t s : unit.segments) {
            const FlatParameters::Segment& slot = parameters.segments()[s];
            segments.push_back(
                {{"name", slot.name}, {"shape", slot.shape}, {"offset", slot.offset}});
        }
        units.push_back({{"id", unit.id}, {"numel", unit.numel}, {"segments", segments}});
    }
    return units;
}

// The tensors one rank contributes: its generator, and its shard of every unit.
common::Status writeRankFile(const std::string& path, FlatParameters& parameters,
    FlatAdamW& optimizer, const TrainerState& state, bool withShard)
{
    torch::NoGradGuard noGrad;
    std::vector<safetensors::TensorToWrite> tensors;
    const torch::Tensor rng = state.dropoutGeneratorState.defined()
        ? state.dropoutGeneratorState.contiguous()
        : torch::Tensor();
    if (rng.defined())
        tensors.push_back({"rng.dropout", safetensors::DType::U8, {rng.numel()}, bytesOf(rng)});
    // Host copies of states that live on a GPU; the list keeps them alive
    // until the file is written (the same bytes resume on either device).
    std::list<torch::Tensor> onHost;
    const auto hostBytes = [&onHost](const torch::Tensor& tensor) {
        if (tensor.is_cpu())
            return bytesOf(tensor);
        return bytesOf(onHost.emplace_back(tensor.to(torch::kCPU)));
    };
    auto& units = parameters.units();
    for (size_t u = 0; withShard && u < units.size(); ++u) {
        const std::string prefix = "unit." + std::to_string(units[u].id) + ".";
        const safetensors::DType dtype = fileType(units[u].master.scalar_type());
        const std::vector<std::int64_t> shape{units[u].shardNumel};
        tensors.push_back({prefix + "master", dtype, shape, hostBytes(units[u].master)});
        tensors.push_back({prefix + "exp_avg", dtype, shape, hostBytes(optimizer.firstMoment(u))});
        tensors.push_back(
            {prefix + "exp_avg_sq", dtype, shape, hostBytes(optimizer.secondMoment(u))});
    }
    return safetensors::writeSafetensors(
        path, tensors, {{"format", "pt"}, {kDropoutDeviceKey, state.dropoutGeneratorDevice}});
}

// Copies the elements [begin, begin + target.numel()) of a unit's flat
// buffer, as `shardCount` files hold it, into `target`.
common::Status readUnitRange(const std::vector<safetensors::SafetensorsFile>& shards,
    const std::string& name, std::int64_t begin, torch::Tensor target, std::int64_t unitNumel)
{
    const std::int64_t end = std::min(begin + target.numel(), unitNumel);
    target.zero_(); // padding
    for (const safetensors::SafetensorsFile& file : shards) {
        const safetensors::TensorInfo* info = file.find(name);
        if (!info)
            return Error::at(file.path(), "tensor '" + name + "'", "is missing",
                "was the checkpoint written by a run with the same method and targets?");
        if (info->dtype != fileType(target.scalar_type()))
            return Error::at(file.path(), "tensor '" + name + "'",
                "dtype " + std::string(safetensors::dtypeName(info->dtype)) + ", expected "
                    + std::string(safetensors::dtypeName(fileType(target.scalar_type()))),
                "was the checkpoint written with the same precision?");
    }
    const auto shardNumel = static_cast<std::int64_t>(shards.front().find(name)->elementCount());
    for (size_t k = 0; k < shards.size(); ++k) {
        const std::int64_t from = static_cast<std::int64_t>(k) * shardNumel;
        const std::int64_t lo = std::max(begin, from);
        const std::int64_t hi = std::min(end, from + shardNumel);
        if (lo >= hi)
            continue;
        const safetensors::TensorInfo* info = shards[k].find(name);
        if (static_cast<std::int64_t>(info->elementCount()) != shardNumel)
            return Error::at(shards[k].path(), "tensor '" + name + "'",
                "has " + std::to_string(info->elementCount()) + " elements, the other shards "
                    + std::to_string(shardNumel));
        // Read on the host; the copy below moves it to the target's device.
        torch::Tensor whole = torch::empty({shardNumel}, target.options().device(torch::kCPU));
        if (auto status = shards[k].read(*info,
                {static_cast<std::byte*>(whole.data_ptr()), static_cast<size_t>(whole.nbytes())});
            !status)
            return status;
        target.narrow(0, lo - begin, hi - lo).copy_(whole.narrow(0, lo - from, hi - lo));
    }
    return common::Ok{};
}

common::Status checkLayout(
    const json& saved, const FlatParameters& parameters, const std::string& statePath)
{
    const json current = layoutJson(parameters);
    if (saved == current)
        return common::Ok{};
    if (saved.size() != current.size())
        return Error::at(statePath, "field 'units'",
            "the checkpoint has " + std::to_string(saved.size()) + " parameter units, the run "
                + std::to_string(current.size()),
            "was the checkpoint written by a run with the same model, method and targets?");
    for (size_t u = 0; u < saved.size(); ++u) {
        if (saved[u] != current[u])
            return Error::at(statePath, "field 'units[" + std::to_string(u) + "]'",
                "unit " + common::shownJson(saved[u].value("id", json()))
                    + " holds other parameters than the "
                      "run's (first: "
                    + current[u]["segments"][0].value("name", std::string()) + ")",
                "was the checkpoint written by a run with the same model, method and targets?");
    }
    return common::Ok{};
}

} // namespace

std::string checkpointFolderName(std::int64_t step)
{
    char name[32];
    std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
    return name;
}

common::Result<std::int64_t> writeCheckpoint(const std::string& checkpointsDir,
    FlatParameters& parameters, FlatAdamW& optimizer, const TrainerState& state,
    const CheckpointRank& who, const std::function<common::Status(const std::string&)>& extra)
{
    const std::string name = checkpointFolderName(state.step);
    const std::string finalDir = checkpointsDir + "/" + name;
    // Every rank writes here; removeStaleStagingDirectories() knows the marker.
    const std::string partsDir = checkpointsDir + "/." + name + ".tmp-parts";
    auto barrier = [&] {
        if (who.barrier)
            who.barrier();
    };
    std::error_code error;
    fs::create_directories(partsDir, error);
    common::Status written = common::Ok{};
    if (error)
        written = Error::at(partsDir, "", "cannot create the folder: " + error.message());
    else {
        try {
            written = writeRankFile(partsDir + "/" + rankFileName(who.rank), parameters, optimizer,
                state, who.writesShard);
        } catch (const std::exception& e) {
            written =
                Error::at(finalDir, "", std::string("writing the checkpoint failed: ") + e.what());
        }
    }
    barrier();
    if (who.rank != 0) {
        barrier(); // rank 0 commits
        if (!written)
            return written.error();
        return std::int64_t{0};
    }
    auto commitAll = [&]() -> common::Result<std::int64_t> {
        if (!written)
            return written.error();
        auto staging = StagingDirectory::create(finalDir);
        if (!staging)
            return staging.error();
        for (int rank = 0; rank < who.worldSize; ++rank) {
            const std::string file = rankFileName(rank);
            fs::rename(partsDir + "/" + file, staging->file(file), error);
            if (error)
                return Error::at(partsDir + "/" + file, "",
                    "rank " + std::to_string(rank) + "'s part is missing: " + error.message());
        }
        if (extra) {
            if (auto status = extra(staging->path()); !status)
                return status.error();
        }
        const json stateJson = {{"format", kFormat}, {"step", state.step},
            {"optimizer_step", optimizer.stepCount()},
            {"data",
                {{"epoch", state.dataPosition.epoch}, {"index", state.dataPosition.index},
                    {"world_size", who.worldSize}}},
            {"world_size", who.worldSize}, {"shard_count", who.shardCount},
            {"units", layoutJson(parameters)}, {"tokens_seen", state.tokensSeen},
            {"train_seconds", state.trainSeconds}, {"method", state.method},
            {"config", state.configYaml}};
        if (auto status =
                common::writeFileAtomic(staging->file(kStateFile), stateJson.dump(1) + "\n");
            !status)
            return status.error();
        if (auto status = staging.value().commit(); !status)
            return status.error();
        std::int64_t bytes = 0;
        for (const auto& entry : fs::recursive_directory_iterator(finalDir, error)) {
            if (entry.is_regular_file(error))
                bytes += static_cast<std::int64_t>(entry.file_size(error));
        }
        return bytes;
    };
    auto result = commitAll();
    fs::remove_all(partsDir, error);
    barrier();
    return result;
}

common::Result<TrainerState> readCheckpoint(const std::string& dir, FlatParameters& parameters,
    FlatAdamW& optimizer, const CheckpointRank& who)
{
    const std::string statePath = dir + "/" + kStateFile;
    const auto text = common::readFile(statePath);
    if (!text)
        return text.error();
    TrainerState state;
    std::int64_t optimizerStep = 0;
    int savedWorld = 1;
    int shardCount = 1;
    json units;
    try {
        const json stateJson = common::parseJsonDocument(*text);
        if (stateJson.at("format").get<int>() != kFormat)
            return Error::at(statePath, "field 'format'",
                "got " + common::shownJson(stateJson.at("format")) + ", expected "
                    + std::to_string(kFormat),
                "checkpoints of format 1 (before distributed training) cannot be resumed");
        state.step = stateJson.at("step").get<std::int64_t>();
        optimizerStep = stateJson.at("optimizer_step").get<std::int64_t>();
        state.dataPosition.epoch = stateJson.at("data").at("epoch").get<std::uint64_t>();
        state.dataPosition.index = stateJson.at("data").at("index").get<std::size_t>();
        savedWorld = stateJson.at("world_size").get<int>();
        shardCount = stateJson.at("shard_count").get<int>();
        units = stateJson.at("units");
        state.tokensSeen = stateJson.at("tokens_seen").get<std::int64_t>();
        state.trainSeconds = stateJson.at("train_seconds").get<double>();
        state.method = stateJson.at("method").get<std::string>();
        state.configYaml = stateJson.at("config").get<std::string>();
    } catch (const std::exception& e) {
        return Error::at(statePath, "", std::string("not a trainer state: ") + e.what());
    }
    if (savedWorld < 1 || shardCount < 1 || shardCount > savedWorld)
        return Error::at(statePath, "field 'shard_count'",
            "got " + std::to_string(shardCount) + " shards of a world of "
                + std::to_string(savedWorld) + ", expected 1 to the world size");
    if (auto status = checkLayout(units, parameters, statePath); !status)
        return status.error();
    std::vector<safetensors::SafetensorsFile> shards;
    for (int k = 0; k < shardCount; ++k) {
        auto file = safetensors::SafetensorsFile::open(dir + "/" + rankFileName(k));
        if (!file)
            return file.error();
        shards.push_back(std::move(file).value());
    }
    if (savedWorld == who.worldSize) {
        auto own = safetensors::SafetensorsFile::open(dir + "/" + rankFileName(who.rank));
        if (!own)
            return own.error();
        if (const auto* info = own->find("rng.dropout")) {
            state.dropoutGeneratorState =
                torch::empty({static_cast<std::int64_t>(info->elementCount())}, torch::kByte);
            if (auto status = own->read(*info,
                    {static_cast<std::byte*>(state.dropoutGeneratorState.data_ptr()),
                        static_cast<size_t>(state.dropoutGeneratorState.nbytes())});
                !status)
                return status.error();
            state.dropoutGeneratorDevice = dropoutDeviceOf(*own, info->elementCount());
        }
    } else {
        // Every rank consumed the same count; keep the samples seen in all.
        const std::size_t seen = state.dataPosition.index * static_cast<std::size_t>(savedWorld);
        state.dataPosition.index = seen / static_cast<std::size_t>(who.worldSize);
        state.warnings.push_back("the checkpoint was written by " + std::to_string(savedWorld)
            + " ranks, this run has " + std::to_string(who.worldSize)
            + ": the data order and dropout masks continue differently than they would have");
    }
    try {
        torch::NoGradGuard noGrad;
        auto& own = parameters.units();
        for (size_t u = 0; u < own.size(); ++u) {
            const std::string prefix = "unit." + std::to_string(own[u].id) + ".";
            const std::int64_t begin = own[u].shardOffset;
            for (const auto& [suffix, target] :
                {std::pair<std::string, torch::Tensor>{"master", own[u].master},
                    {"exp_avg", optimizer.firstMoment(u)},
                    {"exp_avg_sq", optimizer.secondMoment(u)}}) {
                if (auto status =
                        readUnitRange(shards, prefix + suffix, begin, target, own[u].numel);
                    !status)
                    return status.error();
            }
        }
        optimizer.setStepCount(optimizerStep);
        parameters.copyMasterToModel();
    } catch (const std::exception& e) {
        return Error::at(dir, "", std::string("reading the checkpoint failed: ") + e.what());
    }
    return state;
}

std::vector<std::string> listCheckpoints(const std::string& checkpointsDir)
{
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(checkpointsDir, error)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_directory(error) && name.starts_with("step-") && name.size() == 13
            && fs::exists(entry.path() / kStateFile, error))
            names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    std::vector<std::string> paths;
    for (const std::string& name : names)
        paths.push_back(checkpointsDir + "/" + name);
    return paths;
}

common::Result<std::string> setAsideCheckpointsAfter(
    const std::string& checkpointsDir, std::int64_t step)
{
    const std::string resumed = checkpointFolderName(step);
    std::vector<std::string> newer;
    for (const std::string& path : listCheckpoints(checkpointsDir)) {
        if (fs::path(path).filename().string() > resumed) // zero-padded: names sort by step
            newer.push_back(path);
    }
    if (newer.empty())
        return std::string();
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
    std::string aside = checkpointsDir + "/abandoned-" + stamp;
    std::error_code error;
    for (int suffix = 2; fs::exists(aside, error); ++suffix)
        aside = checkpointsDir + "/abandoned-" + stamp + "-" + std::to_string(suffix);
    fs::create_directories(aside, error);
    if (error)
        return Error::at(aside, "", "cannot create the folder: " + error.message());
    for (const std::string& path : newer) {
        fs::rename(path, aside + "/" + fs::path(path).filename().string(), error);
        if (error)
            return Error::at(path, "", "cannot move it into " + aside + ": " + error.message(),
                "move the checkpoints after step " + std::to_string(step)
                    + " out of the folder, or resume from the newest");
    }
    return aside;
}

void pruneCheckpoints(const std::string& checkpointsDir, int keep)
{
    std::vector<std::string> all = listCheckpoints(checkpointsDir);
    const auto excess = static_cast<std::ptrdiff_t>(all.size()) - std::max(1, keep);
    for (std::ptrdiff_t i = 0; i < excess; ++i) {
        std::error_code ignored;
        fs::remove_all(all[static_cast<size_t>(i)], ignored);
    }
}

} // namespace tb::train
