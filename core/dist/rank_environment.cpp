#include "dist/rendezvous.h"

#include "common/run_secret.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>

namespace tb::dist {
namespace {

using Variables = std::map<std::string, std::string>;

constexpr std::size_t kMaxRunIdLength = 128;

// The variables torchrun sets, read from the process when the caller passed none.
Variables processVariables()
{
    Variables variables;
    for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
             "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "TORCHELASTIC_RUN_ID",
             "TORCHELASTIC_USE_AGENT_STORE", common::kRunSecretVariable}) {
        if (const char* value = std::getenv(name))
            variables[name] = value;
    }
    return variables;
}

std::optional<std::string> lookup(const Variables& variables, const std::string& name)
{
    const auto found = variables.find(name);
    if (found == variables.end())
        return std::nullopt;
    return found->second;
}

common::Error problem(
    const std::string& name, const std::string& value, const std::string& expected)
{
    return common::Error{"environment variable " + name + "='" + value + "': expected " + expected,
        "torchrun sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK and "
        "LOCAL_WORLD_SIZE for every rank"};
}

common::Error missing(const std::string& name, int worldSize, const std::string& expected)
{
    return common::Error{"environment variable " + name + " is not set (WORLD_SIZE is "
            + std::to_string(worldSize) + "): expected " + expected,
        "start the ranks with torchrun or tunebench-cli launch"};
}

std::optional<int> parseInt(const std::string& text)
{
    int value = 0;
    const char* end = text.data() + text.size();
    const auto [last, error] = std::from_chars(text.data(), end, value);
    if (text.empty() || error != std::errc{} || last != end)
        return std::nullopt;
    return value;
}

// Reads NAME as an integer in [low, high]; `expected` says so in words.
common::Result<int> readInt(const Variables& variables, const std::string& name, int low, int high,
    const std::string& expected, int worldSize)
{
    const auto text = lookup(variables, name);
    if (!text)
        return missing(name, worldSize, expected);
    const auto value = parseInt(*text);
    if (!value || *value < low || *value > high)
        return problem(name, *text, expected);
    return *value;
}

std::string range(int endExclusive)
{
    return "an integer from 0 to " + std::to_string(endExclusive - 1);
}

} // namespace

common::Result<RankEnvironment> readRankEnvironment(const Variables& environment)
{
    const Variables variables = environment.empty() ? processVariables() : environment;
    RankEnvironment result;

    const auto worldText = lookup(variables, "WORLD_SIZE");
    if (!worldText) {
        // Not started by a launcher: a world of one, unless a rank says otherwise.
        if (const auto rankText = lookup(variables, "RANK"); rankText && *rankText != "0")
            return common::Error{"environment variable RANK='" + *rankText
                    + "' is set but WORLD_SIZE is not: expected both or neither",
                {}};
        return result;
    }
    const auto worldSize = parseInt(*worldText);
    if (!worldSize || *worldSize < 1)
        return problem("WORLD_SIZE", *worldText, "a positive integer");
    result.worldSize = *worldSize;
    if (result.worldSize == 1)
        return result;

    const int world = result.worldSize;
    auto rank = readInt(variables, "RANK", 0, world - 1,
        range(world) + " (WORLD_SIZE is " + std::to_string(world) + ")", world);
    if (!rank)
        return rank.error();
    result.rank = *rank;

    auto localWorldSize = readInt(variables, "LOCAL_WORLD_SIZE", 1, world,
        "a positive divisor of WORLD_SIZE=" + std::to_string(world), world);
    if (!localWorldSize)
        return localWorldSize.error();
    if (world % *localWorldSize != 0)
        return problem("LOCAL_WORLD_SIZE", std::to_string(*localWorldSize),
            "a divisor of WORLD_SIZE=" + std::to_string(world)
                + " (every node runs the same number of ranks)");
    result.localWorldSize = *localWorldSize;

    const int local = result.localWorldSize;
    auto localRank = readInt(variables, "LOCAL_RANK", 0, local - 1,
        range(local) + " (LOCAL_WORLD_SIZE is " + std::to_string(local) + ")", world);
    if (!localRank)
        return localRank.error();
    result.localRank = *localRank;
    // Ranks are numbered node by node, so the node follows from the rank.
    result.nodeRank = result.rank / local;
    if (result.localRank != result.rank % local)
        return problem("LOCAL_RANK", std::to_string(result.localRank),
            std::to_string(result.rank % local) + " (RANK " + std::to_string(result.rank)
                + " modulo LOCAL_WORLD_SIZE " + std::to_string(local) + ")");
    for (const char* name : {"NODE_RANK", "GROUP_RANK"}) {
        const auto text = lookup(variables, name);
        if (!text)
            continue;
        const auto node = parseInt(*text);
        if (!node || *node != result.nodeRank)
            return problem(name, *text,
                std::to_string(result.nodeRank) + " (RANK " + std::to_string(result.rank)
                    + " divided by LOCAL_WORLD_SIZE " + std::to_string(local) + ")");
    }

    const auto address = lookup(variables, "MASTER_ADDR");
    if (!address)
        return missing("MASTER_ADDR", world, "the host name or address of rank 0");
    if (address->empty())
        return problem("MASTER_ADDR", *address, "the host name or address of rank 0");
    result.masterAddr = *address;
    auto port = readInt(variables, "MASTER_PORT", 1, 65535, "a TCP port from 1 to 65535", world);
    if (!port)
        return port.error();
    result.masterPort = *port;

    if (const auto runId = lookup(variables, "TORCHELASTIC_RUN_ID")) {
        const bool printable =
            std::all_of(runId->begin(), runId->end(), [](char c) { return c > ' ' && c < 127; });
        if (runId->empty() || runId->size() > kMaxRunIdLength || !printable)
            return problem("TORCHELASTIC_RUN_ID", *runId,
                "the job's id: 1 to " + std::to_string(kMaxRunIdLength)
                    + " printable characters without spaces, the same on every rank");
        result.runId = *runId;
    }
    // torchrun's agent serves the store at MASTER_ADDR:MASTER_PORT itself
    // and says so; PyTorch's own ranks then only connect to it.
    result.agentServesStore = lookup(variables, "TORCHELASTIC_USE_AGENT_STORE") == "True";
    if (const auto secret = lookup(variables, common::kRunSecretVariable)) {
        if (common::Status valid = common::checkRunSecret(*secret); !valid)
            return valid.error();
        result.runSecret = *secret;
    }
    return result;
}

} // namespace tb::dist
