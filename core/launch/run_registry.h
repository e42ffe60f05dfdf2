#pragma once

#include "common/error.h"

#include <string>
#include <vector>

namespace tb::launch {

// A node's part of a run started detached (`tunebench-cli launch --detach`),
// recorded on that machine so the run can be found again after the SSH link,
// the GUI or the CLI that started it is gone: `monitor --host H` lists these.
struct RegistryEntry {
    std::string runId;
    int nodeRank = 0;
    int nnodes = 1;
    int nproc = 1;
    long long pid = 0; // the node's launcher
    std::string host; // this machine's name
    std::string config; // the run config, as the launcher's command line names it
    std::string runDir; // output.dir: events.jsonl, checkpoints, exports
    std::string log; // the launcher's stdout and stderr
    std::string startedAt; // UTC, ISO 8601
    // "running" until the launcher ends and records "exited" with its code;
    // a "running" entry whose launcher is gone reads "vanished" (it was killed).
    std::string state = "running";
    int exitCode = -1;
    // It exited because a stop was asked for (Ctrl-C, --stop, a Stop button):
    // its exit code is then the forwarded signal's 128+N, not a failure.
    bool stoppedOnRequest = false;
    std::string endedAt;
    std::string summary; // the launcher's last line: what failed, or that all finished

    // "running", "vanished", "exit 0", "stopped (exit 143)": for a person.
    std::string stateText() const;
    // Vanished, or exited non-zero without a stop being asked for.
    bool failed() const;
};

// ${XDG_STATE_HOME:-$HOME/.local/state}/tunebench/runs. An Error when
// neither is an absolute path: no shared fallback such as /tmp, where another
// user could plant entries that node-check --signal acts on.
common::Result<std::string> registryDir();
// <dir>/<run id>.node<K>.json; the log sits beside it as .log.
std::string registryEntryPath(const std::string& dir, const std::string& runId, int nodeRank);

// The registry folder is private: entries and logs hold configs, paths and
// the ranks' output, and an entry names the process that a stop signals. An
// Error names the folder when another user owns it or others may write to
// it; a missing folder is fine (nothing registered).
common::Status checkRegistryDir(const std::string& dir);
// Creates `dir` 0700 (its parents as usual) and checks it; a folder of ours
// that others may read is made 0700.
common::Status makeRegistryDir(const std::string& dir);

// Written atomically, 0600, in a folder made by makeRegistryDir: a reader
// sees the old entry or the new one.
common::Status writeRegistryEntry(const std::string& path, const RegistryEntry& entry);
common::Result<RegistryEntry> readRegistryEntry(const std::string& path);

// Every entry under `dir`, newest first, each with its state checked against
// the live processes ("vanished" for a running entry whose launcher is gone).
// Entries that cannot be read are skipped and named in `unreadable`; a
// folder that checkRegistryDir refuses is an Error.
common::Result<std::vector<RegistryEntry>> listRegistry(
    const std::string& dir, std::vector<std::string>* unreadable = nullptr);

// listRegistry of registryDir(): this machine's runs.
common::Result<std::vector<RegistryEntry>> listLocalRegistry(
    std::vector<std::string>* unreadable = nullptr);

// Whether `entry`'s launcher is alive: the pid exists and still runs
// `tunebench-cli launch` with this run id (--run-id ID) or this config as
// one of its words (a reused pid does not count).
bool launcherAlive(const RegistryEntry& entry);

std::string registryEntryToJson(const RegistryEntry& entry);
common::Result<RegistryEntry> registryEntryFromJson(
    const std::string& text, const std::string& where);

// Now, UTC, "2026-11-24T12:00:00Z".
std::string utcNow();

} // namespace tb::launch
