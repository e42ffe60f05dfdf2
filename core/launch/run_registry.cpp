#include "launch/run_registry.h"

#include "common/atomic_file.h"
#include "common/json_text.h"
#include "launch/world_layout.h"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace tb::launch {

namespace {

namespace fs = std::filesystem;
using common::Error;

// The process's argv, a word each.
std::vector<std::string> commandWords(long long pid)
{
    std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::vector<std::string> words;
    std::string word;
    while (std::getline(file, word, '\0'))
        words.push_back(word);
    return words;
}

} // namespace

common::Result<std::string> registryDir()
{
    const char* state = std::getenv("XDG_STATE_HOME");
    if (state && *state == '/')
        return std::string(state) + "/tunebench/runs";
    const char* home = std::getenv("HOME");
    if (home && *home == '/')
        return std::string(home) + "/.local/state/tunebench/runs";
    return Error{"run registry: HOME is "
            + (home ? "'" + std::string(home) + "'" : std::string("not set"))
            + " and XDG_STATE_HOME names no absolute folder: expected one of them to say where it "
              "goes",
        "set HOME (or XDG_STATE_HOME) to your own folder"};
}

common::Status checkRegistryDir(const std::string& dir)
{
    struct stat info { };
    if (::stat(dir.c_str(), &info) != 0)
        return errno == ENOENT ? common::Status(common::Ok{})
                               : Error{"run registry '" + dir + "': " + std::strerror(errno), {}};
    if (!S_ISDIR(info.st_mode))
        return Error{"run registry '" + dir + "': not a folder", {}};
    if (info.st_uid != ::geteuid())
        return Error{"run registry '" + dir + "': owned by uid " + std::to_string(info.st_uid)
                + ", expected this user's (uid " + std::to_string(::geteuid())
                + "): refusing to use it",
            "someone else may have made it to plant entries; remove it or set XDG_STATE_HOME"};
    if (info.st_mode & (S_IWGRP | S_IWOTH)) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(info.st_mode & 07777));
        return Error{"run registry '" + dir + "': mode " + mode
                + " lets other users write to it, expected 0700: refusing to use it",
            "check what is in it, then chmod 700 " + dir};
    }
    return common::Ok{};
}

common::Status makeRegistryDir(const std::string& dir)
{
    std::error_code error;
    fs::create_directories(fs::path(dir).parent_path(), error);
    if (error || (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST))
        return Error{"run registry '" + dir + "': cannot be created: "
                + (error ? error.message() : std::string(std::strerror(errno))),
            {}};
    if (common::Status checked = checkRegistryDir(dir); !checked)
        return checked;
    // Made 0755 by earlier versions; ours, so it can be closed.
    if (::chmod(dir.c_str(), 0700) != 0)
        return Error{
            "run registry '" + dir + "': cannot make it 0700: " + std::strerror(errno), {}};
    return common::Ok{};
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
        {"config", e.config}, {"run_dir", e.runDir}, {"log", e.log}, {"started_at", e.startedAt},
        {"state", e.state}, {"exit_code", e.exitCode}, {"stopped_on_request", e.stoppedOnRequest},
        {"ended_at", e.endedAt}, {"summary", e.summary}};
    return json.dump();
}

common::Result<RegistryEntry> registryEntryFromJson(
    const std::string& text, const std::string& where)
{
    try {
        const nlohmann::json json = common::parseJson(text);
        RegistryEntry e;
        e.runId = json.at("run_id").get<std::string>();
        // By type and range: a pid of -1 or 2^32 - 1 (-1 as a pid_t) would
        // signal every process the user owns; 0 names no process.
        e.nodeRank = int(common::jsonIntegerAt(json, "node_rank", 0, kMaxNodes - 1));
        e.nnodes = int(common::jsonIntegerAt(json, "nnodes", 1, kMaxNodes));
        e.nproc = int(common::jsonIntegerAt(json, "nproc", 1, kMaxProcsPerNode));
        e.pid = common::jsonIntegerAt(json, "pid", 0, std::numeric_limits<pid_t>::max());
        e.host = json.at("host").get<std::string>();
        e.config = json.at("config").get<std::string>();
        e.runDir = json.at("run_dir").get<std::string>();
        e.log = json.at("log").get<std::string>();
        e.startedAt = json.at("started_at").get<std::string>();
        e.state = json.at("state").get<std::string>();
        e.exitCode = int(common::jsonIntegerAt(json, "exit_code", -255, 255));
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
    if (common::Status made = makeRegistryDir(fs::path(path).parent_path().string()); !made)
        return made;
    return common::writeFileAtomic(path, registryEntryToJson(entry) + "\n", 0600);
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
    // Whole words, not substrings: an entry naming "/x/" or "a" as its
    // config must not match every launcher there is.
    const std::vector<std::string> words = commandWords(entry.pid);
    if (words.size() < 3 || words[1] != "launch")
        return false;
    for (size_t i = 2; i < words.size(); ++i) {
        const bool runId = words[i] == "--run-id=" + entry.runId
            || (words[i] == "--run-id" && i + 1 < words.size() && words[i + 1] == entry.runId);
        if (runId || (!entry.config.empty() && words[i] == entry.config))
            return true;
    }
    return false;
}

common::Result<std::vector<RegistryEntry>> listRegistry(
    const std::string& dir, std::vector<std::string>* unreadable)
{
    if (common::Status checked = checkRegistryDir(dir); !checked)
        return checked.error();
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

common::Result<std::vector<RegistryEntry>> listLocalRegistry(std::vector<std::string>* unreadable)
{
    common::Result<std::string> dir = registryDir();
    if (!dir)
        return dir.error();
    return listRegistry(*dir, unreadable);
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
