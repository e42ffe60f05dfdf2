#include "train/checkpoint.h"

#include "common/atomic_file.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"
#include "train/staging_directory.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace tb::train {

namespace fs = std::filesystem;
using common::Error;
using nlohmann::json;

namespace {

constexpr const char* kStateFile = "trainer_state.json";
constexpr int kFormat = 1;

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

std::string toHex(const torch::Tensor& bytes)
{
    const torch::Tensor contiguous = bytes.contiguous();
    const auto* data = contiguous.data_ptr<std::uint8_t>();
    std::string out;
    out.reserve(static_cast<size_t>(contiguous.numel()) * 2);
    char pair[3];
    for (std::int64_t i = 0; i < contiguous.numel(); ++i) {
        std::snprintf(pair, sizeof pair, "%02x", data[i]);
        out += pair;
    }
    return out;
}

std::optional<torch::Tensor> fromHex(const std::string& text)
{
    if (text.size() % 2 != 0)
        return std::nullopt;
    torch::Tensor out = torch::empty({static_cast<std::int64_t>(text.size() / 2)}, torch::kByte);
    auto* data = out.data_ptr<std::uint8_t>();
    for (size_t i = 0; i < text.size(); i += 2) {
        unsigned value = 0;
        if (std::sscanf(text.c_str() + i, "%2x", &value) != 1)
            return std::nullopt;
        data[i / 2] = static_cast<std::uint8_t>(value);
    }
    return out;
}

// Reads `name` from `file` straight into `target` (contiguous, same dtype and size).
common::Status readExact(
    const safetensors::SafetensorsFile& file, const std::string& name, torch::Tensor target)
{
    const safetensors::TensorInfo* info = file.find(name);
    const std::string where = "tensor '" + name + "'";
    if (!info)
        return Error::at(file.path(), where, "is missing",
            "was the checkpoint written by a run with the same method and targets?");
    if (info->dtype != fileType(target.scalar_type()))
        return Error::at(file.path(), where,
            "dtype " + std::string(safetensors::dtypeName(info->dtype)) + ", expected "
                + std::string(safetensors::dtypeName(fileType(target.scalar_type()))),
            "was the checkpoint written with the same precision?");
    if (static_cast<std::int64_t>(info->elementCount()) != target.numel()
        || c10::IntArrayRef(info->shape) != target.sizes())
        return Error::at(file.path(), where, "shape does not match the model's parameter");
    return file.read(
        *info, {static_cast<std::byte*>(target.data_ptr()), static_cast<size_t>(target.nbytes())});
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
    const std::function<common::Status(const std::string& stagingDir)>& extra)
{
    const std::string finalDir = checkpointsDir + "/" + checkpointFolderName(state.step);
    auto staging = StagingDirectory::create(finalDir);
    if (!staging)
        return staging.error();
    try {
        torch::NoGradGuard noGrad;
        const safetensors::DType dtype = fileType(parameters.master().scalar_type());
        std::vector<safetensors::TensorToWrite> weights;
        std::vector<safetensors::TensorToWrite> moments;
        for (const auto& slot : parameters.segments()) {
            auto bytesOf = [&](const torch::Tensor& flat) {
                const torch::Tensor view = flat.narrow(0, slot.offset, slot.numel);
                return std::span<const std::byte>(
                    static_cast<const std::byte*>(view.data_ptr()), view.nbytes());
            };
            weights.push_back({slot.name, dtype, slot.shape, bytesOf(parameters.master())});
            moments.push_back(
                {"exp_avg." + slot.name, dtype, slot.shape, bytesOf(optimizer.firstMoment())});
            moments.push_back(
                {"exp_avg_sq." + slot.name, dtype, slot.shape, bytesOf(optimizer.secondMoment())});
        }
        if (auto status = safetensors::writeSafetensors(
                staging->file("trainable.safetensors"), weights, {{"format", "pt"}});
            !status)
            return status.error();
        if (auto status = safetensors::writeSafetensors(
                staging->file("optimizer.safetensors"), moments, {{"format", "pt"}});
            !status)
            return status.error();
    } catch (const std::exception& e) {
        return Error::at(finalDir, "", std::string("writing the checkpoint failed: ") + e.what());
    }
    if (extra) {
        if (auto status = extra(staging->path()); !status)
            return status.error();
    }
    const json stateJson = {{"format", kFormat}, {"step", state.step},
        {"optimizer_step", optimizer.stepCount()},
        {"data", {{"epoch", state.dataPosition.epoch}, {"index", state.dataPosition.index}}},
        {"dropout_rng",
            state.dropoutGeneratorState.defined() ? toHex(state.dropoutGeneratorState)
                                                  : std::string()},
        {"tokens_seen", state.tokensSeen}, {"train_seconds", state.trainSeconds},
        {"method", state.method}, {"config", state.configYaml}};
    if (auto status = common::writeFileAtomic(staging->file(kStateFile), stateJson.dump(1) + "\n");
        !status)
        return status.error();
    if (auto status = staging.value().commit(); !status)
        return status.error();
    std::int64_t bytes = 0;
    std::error_code error;
    for (const auto& entry : fs::recursive_directory_iterator(finalDir, error)) {
        if (entry.is_regular_file(error))
            bytes += static_cast<std::int64_t>(entry.file_size(error));
    }
    return bytes;
}

common::Result<TrainerState> readCheckpoint(
    const std::string& dir, FlatParameters& parameters, FlatAdamW& optimizer)
{
    const std::string statePath = dir + "/" + kStateFile;
    const auto text = common::readFile(statePath);
    if (!text)
        return text.error();
    TrainerState state;
    std::int64_t optimizerStep = 0;
    try {
        const json stateJson = json::parse(*text);
        if (stateJson.at("format").get<int>() != kFormat)
            return Error::at(statePath, "field 'format'",
                "got " + stateJson.at("format").dump() + ", expected " + std::to_string(kFormat));
        state.step = stateJson.at("step").get<std::int64_t>();
        optimizerStep = stateJson.at("optimizer_step").get<std::int64_t>();
        state.dataPosition.epoch = stateJson.at("data").at("epoch").get<std::uint64_t>();
        state.dataPosition.index = stateJson.at("data").at("index").get<std::size_t>();
        const std::string rng = stateJson.at("dropout_rng").get<std::string>();
        if (!rng.empty()) {
            auto bytes = fromHex(rng);
            if (!bytes)
                return Error::at(statePath, "field 'dropout_rng'", "is not a hex string");
            state.dropoutGeneratorState = *bytes;
        }
        state.tokensSeen = stateJson.at("tokens_seen").get<std::int64_t>();
        state.trainSeconds = stateJson.at("train_seconds").get<double>();
        state.method = stateJson.at("method").get<std::string>();
        state.configYaml = stateJson.at("config").get<std::string>();
    } catch (const std::exception& e) {
        return Error::at(statePath, "", std::string("not a trainer state: ") + e.what());
    }
    auto weights = safetensors::SafetensorsFile::open(dir + "/trainable.safetensors");
    if (!weights)
        return weights.error();
    auto moments = safetensors::SafetensorsFile::open(dir + "/optimizer.safetensors");
    if (!moments)
        return moments.error();
    const size_t expected = parameters.segments().size();
    if (weights->tensors().size() != expected || moments->tensors().size() != 2 * expected)
        return Error::at(weights->path(), "",
            "holds " + std::to_string(weights->tensors().size()) + " tensors, the run trains "
                + std::to_string(expected),
            "was the checkpoint written by a run with the same method and targets?");
    try {
        torch::NoGradGuard noGrad;
        torch::Tensor expAvg = torch::empty_like(optimizer.firstMoment());
        torch::Tensor expAvgSq = torch::empty_like(optimizer.secondMoment());
        for (const auto& slot : parameters.segments()) {
            if (auto status = readExact(*weights, slot.name,
                    parameters.master().narrow(0, slot.offset, slot.numel).view(slot.shape));
                !status)
                return status.error();
            if (auto status = readExact(*moments, "exp_avg." + slot.name,
                    expAvg.narrow(0, slot.offset, slot.numel).view(slot.shape));
                !status)
                return status.error();
            if (auto status = readExact(*moments, "exp_avg_sq." + slot.name,
                    expAvgSq.narrow(0, slot.offset, slot.numel).view(slot.shape));
                !status)
                return status.error();
        }
        optimizer.restore(optimizerStep, expAvg, expAvgSq);
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
