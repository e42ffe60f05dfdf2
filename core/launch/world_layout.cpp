#include "launch/world_layout.h"

#include "common/run_secret.h"
#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <random>
#include <unistd.h>

extern char** environ;

namespace tb::launch {

namespace {

std::string nameOf(const std::string& entry)
{
    return entry.substr(0, entry.find('='));
}

} // namespace

common::Status validateLayout(const WorldLayout& layout)
{
    std::vector<std::string> problems;
    auto range = [&](const char* field, long long value, long long min, long long max) {
        if (value < min || value > max)
            problems.push_back(std::string(field) + ": got " + std::to_string(value) + ", expected "
                + std::to_string(min) + " to " + std::to_string(max));
    };
    range("nproc", layout.nprocPerNode, 1, kMaxProcsPerNode);
    range("nnodes", layout.nnodes, 1, kMaxNodes);
    if (layout.nnodes >= 1)
        range("node_rank", layout.nodeRank, 0, layout.nnodes - 1);
    range("master_port", layout.masterPort, 0, 65535);
    if (!layout.runId.empty()) // empty: one is made (newRunId)
        if (common::Status valid = checkRunId(layout.runId); !valid)
            problems.push_back(valid.error().message);
    if (layout.masterAddr.empty())
        problems.push_back("master_addr: empty, expected a host name or address");
    if (layout.nnodes > 1 && layout.masterPort == 0)
        problems.push_back("master_port: needed with more than one node (every node must "
                           "use the same port)");
    if (problems.empty())
        return common::Ok{};
    std::string text;
    for (const std::string& problem : problems)
        text += (text.empty() ? "" : "; ") + problem;
    return common::Error{text, {}};
}

common::Status checkRunId(const std::string& runId)
{
    const bool allowed = std::all_of(runId.begin(), runId.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
    if (!runId.empty() && runId.size() <= kMaxRunIdLength && allowed && runId.front() != '.')
        return common::Ok{};
    return common::Error{"run_id: got '" + common::escapeControl(runId) + "', expected up to "
            + std::to_string(kMaxRunIdLength)
            + " letters, digits, '.', '_' and '-', not starting with '.'",
        {}};
}

std::string newRunId()
{
    std::random_device seed;
    std::uniform_int_distribution<int> digit(0, 15);
    std::string id;
    for (int index = 0; index < 12; ++index)
        id += "0123456789abcdef"[digit(seed)];
    return id;
}

std::vector<std::string> rankEnvironment(const WorldLayout& layout, int localRank)
{
    const std::string nodeRank = std::to_string(layout.nodeRank);
    return {
        "TORCHELASTIC_RUN_ID=" + (layout.runId.empty() ? std::string("none") : layout.runId),
        "MASTER_ADDR=" + layout.masterAddr,
        "MASTER_PORT=" + std::to_string(layout.masterPort),
        "RANK=" + std::to_string(layout.globalRank(localRank)),
        "WORLD_SIZE=" + std::to_string(layout.worldSize()),
        "LOCAL_RANK=" + std::to_string(localRank),
        "LOCAL_WORLD_SIZE=" + std::to_string(layout.nprocPerNode),
        "NODE_RANK=" + nodeRank,
        "GROUP_RANK=" + nodeRank,
    };
}

std::vector<std::string> mergeEnvironment(
    const std::vector<std::string>& base, const std::vector<std::string>& overrides)
{
    std::vector<std::string> names;
    names.reserve(overrides.size());
    for (const std::string& entry : overrides)
        names.push_back(nameOf(entry));
    std::vector<std::string> merged;
    merged.reserve(base.size() + overrides.size());
    for (const std::string& entry : base) {
        if (std::find(names.begin(), names.end(), nameOf(entry)) == names.end())
            merged.push_back(entry);
    }
    merged.insert(merged.end(), overrides.begin(), overrides.end());
    return merged;
}

std::vector<std::string> currentEnvironment()
{
    std::vector<std::string> entries;
    for (char** entry = environ; entry && *entry; ++entry)
        entries.emplace_back(*entry);
    return entries;
}

common::Result<std::vector<std::string>> withRunSecret(
    std::vector<std::string> environment, const WorldLayout& layout, std::string& warning)
{
    const std::string prefix = std::string(common::kRunSecretVariable) + "=";
    const auto given = std::find_if(environment.begin(), environment.end(),
        [&](const std::string& entry) { return entry.starts_with(prefix); });
    if (given != environment.end()) {
        if (common::Status valid = common::checkRunSecret(given->substr(prefix.size())); !valid)
            return valid.error();
        return environment;
    }
    if (layout.nnodes > 1) {
        warning = std::string("no ") + common::kRunSecretVariable
            + " in the environment: the ranks join without a run secret, so any process that "
              "reaches "
              "the master port may join in a rank's place; set the same one on every node "
              "(`openssl rand -hex 32`), or launch with --hostfile, which does";
        return environment;
    }
    common::Result<std::string> secret = common::newRunSecret();
    if (!secret)
        return secret.error();
    environment.push_back(prefix + *secret);
    return environment;
}

} // namespace tb::launch
