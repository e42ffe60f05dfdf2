#include "launch/node_facts.h"

#include "common/build_id.h"
#include "common/build_info.h"
#include "common/json_text.h"
#include "common/local_machine.h"
#include "common/text.h"
#include "common/units.h"
#include "config/config_loader.h"

#include <nlohmann/json.hpp>

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

namespace tb::launch {

namespace {

namespace fs = std::filesystem;
using common::Error;

int64_t fileBytes(const fs::path& path)
{
    std::error_code error;
    const auto size = fs::file_size(path, error);
    return error ? -1 : int64_t(size);
}

// The regular files of a model folder (weights, config, tokenizer), sorted.
void addFolderFiles(const std::string& folder, std::vector<FileFact>& out)
{
    std::error_code error;
    std::vector<FileFact> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
        if (entry.is_regular_file(error))
            files.push_back({entry.path().string(), fileBytes(entry.path())});
    }
    if (error || files.empty()) {
        out.push_back({folder, -1});
        return;
    }
    std::sort(files.begin(), files.end(),
        [](const FileFact& a, const FileFact& b) { return a.path < b.path; });
    out.insert(out.end(), files.begin(), files.end());
}

// GPUs nvidia-smi lists ("GPU 0: NVIDIA H100 ..." a line), or -1 and why.
int countGpus(std::string& note)
{
    std::FILE* pipe = ::popen("nvidia-smi -L 2>&1", "r");
    if (!pipe) {
        note = "cannot run nvidia-smi";
        return -1;
    }
    int count = 0;
    char line[512];
    std::string firstLine;
    while (std::fgets(line, sizeof line, pipe)) {
        if (firstLine.empty())
            firstLine = line;
        count += std::string_view(line).starts_with("GPU ");
    }
    const int status = ::pclose(pipe);
    if (status != 0) {
        note = firstLine.find("not found") != std::string::npos
            ? "nvidia-smi not found"
            : "nvidia-smi failed: " + common::trim(firstLine);
        return -1;
    }
    return count;
}

int64_t freeBytesAt(fs::path path)
{
    std::error_code error;
    while (!path.empty() && !fs::exists(path, error))
        path = path.parent_path();
    struct statvfs stats { };
    if (path.empty() || ::statvfs(path.c_str(), &stats) != 0)
        return -1;
    return int64_t(stats.f_bavail) * int64_t(stats.f_frsize);
}

int64_t diskNeeded(const config::RunConfig& run, const std::vector<FileFact>& inputs)
{
    int64_t weights = 0;
    for (const FileFact& file : inputs) {
        if (file.path.ends_with(".safetensors") && file.bytes > 0)
            weights += file.bytes;
    }
    const int64_t exportBytes =
        run.output.exportKind == config::ExportKind::Adapter ? weights / 50 : weights;
    if (run.usesLora())
        return exportBytes;
    return int64_t(run.output.keepLast + 1) * 6 * weights + exportBytes;
}

} // namespace

std::string trainerOutputDir(
    const std::vector<std::string>& trainerArguments, const std::string& configured)
{
    std::string dir = configured;
    for (size_t i = 0; i < trainerArguments.size(); ++i) {
        if (trainerArguments[i] == "--output" && i + 1 < trainerArguments.size())
            dir = trainerArguments[i + 1];
        else if (trainerArguments[i].starts_with("--output="))
            dir = trainerArguments[i].substr(9);
    }
    return dir;
}

NodeFacts collectNodeFacts(const std::string& configPath)
{
    NodeFacts facts;
    facts.hostName = common::hostName();
    facts.version = common::buildinfo::kTunebenchVersion;
    facts.buildId = common::executableBuildId();
    facts.inputs.push_back({configPath, fileBytes(configPath)});
    const common::Result<config::RunConfig> run = config::loadRunConfig(configPath);
    if (!run) {
        facts.configError = run.error().toString();
    } else {
        addFolderFiles(run->model, facts.inputs);
        if (!run->tokenizer.empty() && run->tokenizer != run->model)
            addFolderFiles(run->tokenizer, facts.inputs);
        for (const auto* files : {&run->data.trainFiles, &run->data.validationFiles}) {
            for (const std::string& file : *files)
                facts.inputs.push_back({file, fileBytes(file)});
        }
        facts.runDir = fs::absolute(run->output.dir).lexically_normal().string();
        facts.device = std::string(config::toString(run->device));
        facts.diskNeededBytes = diskNeeded(*run, facts.inputs);
    }
    facts.gpuCount = countGpus(facts.gpuNote);
    facts.freeDiskBytes = freeBytesAt(
        facts.runDir.empty() ? fs::path(configPath).parent_path() : fs::path(facts.runDir));
    return facts;
}

nlohmann::json nodeFactsToJson(const NodeFacts& facts)
{
    nlohmann::json inputs = nlohmann::json::array();
    for (const FileFact& file : facts.inputs)
        inputs.push_back({{"path", file.path}, {"bytes", file.bytes}});
    return {{"host", facts.hostName}, {"version", facts.version}, {"build_id", facts.buildId},
        {"config_error", facts.configError}, {"device", facts.device},
        {"disk_needed_bytes", facts.diskNeededBytes}, {"run_dir", facts.runDir}, {"inputs", inputs},
        {"gpu_count", facts.gpuCount}, {"gpu_note", facts.gpuNote},
        {"free_disk_bytes", facts.freeDiskBytes}};
}

common::Result<NodeFacts> nodeFactsFromJson(const std::string& text, const std::string& where)
{
    try {
        const nlohmann::json json = common::parseJson(text);
        NodeFacts facts;
        facts.hostName = json.at("host").get<std::string>();
        facts.version = json.at("version").get<std::string>();
        facts.buildId = json.at("build_id").get<std::string>();
        facts.configError = json.at("config_error").get<std::string>();
        facts.device = json.at("device").get<std::string>();
        constexpr long long kMaxBytes = std::numeric_limits<long long>::max();
        facts.diskNeededBytes = common::jsonIntegerAt(json, "disk_needed_bytes", 0, kMaxBytes);
        facts.runDir = json.at("run_dir").get<std::string>();
        for (const nlohmann::json& file : json.at("inputs"))
            facts.inputs.push_back({file.at("path").get<std::string>(),
                common::jsonIntegerAt(file, "bytes", -1, kMaxBytes)}); // -1: missing
        facts.gpuCount =
            int(common::jsonIntegerAt(json, "gpu_count", -1, 4096)); // -1: no nvidia-smi
        facts.gpuNote = json.at("gpu_note").get<std::string>();
        facts.freeDiskBytes = common::jsonIntegerAt(json, "free_disk_bytes", -1, kMaxBytes);
        return facts;
    } catch (const nlohmann::json::exception& e) {
        std::string shown = text.substr(0, 200);
        return Error{where + ": 'tunebench-cli node-check' answered what is not its JSON ("
                + e.what() + "): " + shown,
            "is the tunebench-cli there an older build?"};
    }
}

std::vector<std::string> compareNodeFacts(
    const NodeFacts& reference, const NodeFacts& node, const std::string& nodeName, int slots)
{
    std::vector<std::string> problems;
    if (node.version != reference.version || node.buildId != reference.buildId)
        problems.push_back(nodeName + ": runs another build of tunebench-cli (" + node.version
            + ", build id " + node.buildId + "; here " + reference.version + ", build id "
            + reference.buildId + ")");
    if (!node.configError.empty()) {
        problems.push_back(nodeName + ": the run config does not load there: " + node.configError);
        return problems; // the inputs it names are unknown there
    }
    for (const FileFact& mine : reference.inputs) {
        const auto theirs = std::find_if(node.inputs.begin(), node.inputs.end(),
            [&](const FileFact& f) { return f.path == mine.path; });
        const int64_t bytes = theirs == node.inputs.end() ? -1 : theirs->bytes;
        if (bytes < 0)
            problems.push_back(nodeName + ": " + mine.path + " is missing");
        else if (bytes != mine.bytes)
            problems.push_back(nodeName + ": " + mine.path + " is " + std::to_string(bytes)
                + " bytes there, " + std::to_string(mine.bytes) + " here");
    }
    // device auto trains on the CPU where no GPU is found, on CUDA otherwise.
    const bool onCuda = node.device == "cuda" || (node.device == "auto" && node.gpuCount > 0);
    if (onCuda && node.gpuCount < slots)
        problems.push_back(nodeName + ": " + std::to_string(slots) + " rank(s) on CUDA but "
            + (node.gpuCount < 0 ? node.gpuNote : std::to_string(node.gpuCount) + " GPU(s)"));
    if (node.freeDiskBytes >= 0 && node.freeDiskBytes < reference.diskNeededBytes)
        problems.push_back(nodeName + ": " + common::formatBytes(double(node.freeDiskBytes))
            + " free at " + node.runDir + ", the run's checkpoints and export need about "
            + common::formatBytes(double(reference.diskNeededBytes)));
    return problems;
}

} // namespace tb::launch
