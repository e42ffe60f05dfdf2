#include "launch/run_registry.h"

#include "common/atomic_file.h"
#include "common/json_text.h"
#include "common/local_machine.h"
#include "launch/world_layout.h"

#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tb::launch {

namespace {

namespace fs = std::filesystem;
using common::Error;

} // namespace

std::string registryDir()
{
    const char* state = std::getenv("XDG_STATE_HOME");
    if (state && *state == '/')
        return std::string(state) + "/tunebench/runs";
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "/tmp") + "/.local/state/tunebench/runs";
}

std::string registryEntryPath(const std::string& dir, const std::string& runId, int nodeRank)
{
    return dir + "/" + runId + ".node" + std::to_string(nodeRank) + ".json";
}

std::string RegistryEntry::stateText() const
{
    if (state != "exited")
        return state;
    const std::string code = "exit " + std::to_string(exitCode);
    return stoppedOnRequest ? "stopped (" + code + ")" : code;
}

bool RegistryEntry::failed() const
{
    return state == "vanished" || (state == "exited" && exitCode != 0 && !stoppedOnRequest);
}

std::string registryEntryToJson(const RegistryEntry& e)
{
    const nlohmann::json json = {{"run_id", e.runId}, {"node_rank", e.nodeRank},
        {"nnodes", e.nnodes}, {"nproc", e.nproc}, {"pid", e.pid}, {"host", e.host},
        {"config", e.config}, {"run_dir", e.runDir}, {"log", e.log},
        {"started_at", e.startedAt}, {"state", e.state}, {"exit_code", e.exitCode},
        {"stopped_on_request", e.stoppedOnRequest}, {"ended_at", e.endedAt}, {"summary", e.summary}};
    return json.dump();
}

common::Result<RegistryEntry> registryEntryFromJson(const std::string& text, const std::string& where)
{
    try {
        const nlohmann::json json = common::parseJson(text);
        RegistryEntry e;
        e.runId = json.at("run_id").get<std::string>();
        e.nodeRank = json.at("node_rank").get<int>();
        e.nnodes = json.at("nnodes").get<int>();
        e.nproc = json.at("nproc").get<int>();
        e.pid = json.at("pid").get<long long>();
        e.host = json.at("host").get<std::string>();
        e.config = json.at("config").get<std::string>();
        e.runDir = json.at("run_dir").get<std::string>();
        e.log = json.at("log").get<std::string>();
        e.startedAt = json.at("started_at").get<std::string>();
        e.state = json.at("state").get<std::string>();
        e.exitCode = json.at("exit_code").get<int>();
        e.stoppedOnRequest = json.at("stopped_on_request").get<bool>();
        e.endedAt = json.at("ended_at").get<std::string>();
        e.summary = json.at("summary").get<std::string>();
        if (common::Status valid = checkRunId(e.runId); !valid)
            return Error{where + ": " + valid.error().message, {}};
        return e;
    } catch (const nlohmann::json::exception& error) {
        return Error{where + ": not a run registry entry: " + error.what(), {}};
    }
}

common::Status writeRegistryEntry(const std::string& path, const RegistryEntry& entry)
{
    std::error_code error;
    fs::create_directories(fs::path(path).parent_path(), error);
    if (error)
        return Error{"run registry '" + fs::path(path).parent_path().string()
                + "': cannot be created: " + error.message(),
            {}};
    return common::writeFileAtomic(path, registryEntryToJson(entry) + "\n");
}

common::Result<RegistryEntry> readRegistryEntry(const std::string& path)
{
    common::Result<std::string> text = common::readFile(path);
    if (!text)
        return text.error();
    return registryEntryFromJson(*text, path);
}

bool launcherAlive(const RegistryEntry& entry)
{
    if (entry.pid <= 0 || ::kill(pid_t(entry.pid), 0) != 0)
        return false;
    const std::string command = common::processCommandLine(entry.pid);
    const std::string configName = fs::path(entry.config).filename().string();
    return command.find(" launch ") != std::string::npos
        && (command.find(entry.runId) != std::string::npos || command.find(configName) != std::string::npos);
}

std::vector<RegistryEntry> listRegistry(const std::string& dir, std::vector<std::string>* unreadable)
{
    std::vector<RegistryEntry> entries;
    std::error_code error;
    for (const fs::directory_entry& file : fs::directory_iterator(dir, error)) {
        if (file.path().extension() != ".json")
            continue;
        common::Result<RegistryEntry> entry = readRegistryEntry(file.path().string());
        if (!entry) {
            if (unreadable)
                unreadable->push_back(entry.error().message);
            continue;
        }
        RegistryEntry value = std::move(entry).value();
        if (value.state == "running" && !launcherAlive(value)) {
            // The launcher records its end, then exits: one that ended
            // between the read and the check has its end in the file now.
            common::Result<RegistryEntry> again = readRegistryEntry(file.path().string());
            if (again && again->state != "running")
                value = std::move(again).value();
            else
                value.state = "vanished";
        }
        entries.push_back(std::move(value));
    }
    std::sort(entries.begin(), entries.end(), [](const RegistryEntry& a, const RegistryEntry& b) {
        return a.startedAt != b.startedAt ? a.startedAt > b.startedAt : a.nodeRank < b.nodeRank;
    });
    return entries;
}

std::string utcNow()
{
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    ::gmtime_r(&now, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text;
}

} // namespace tb::launch
