#pragma once

#include "config/config_problem.h"
#include "config/config_schema.h"
#include "config/run_config.h"
#include "yaml/map_reader.h"

#include <map>
#include <string>

namespace tb::config::detail {

using yaml::describe;
using yaml::MapReader;
using yaml::problemAt;

// One of the spellings fromString<Enum>() reads; messages list allNames<Enum>().
template <typename Enum> bool readChoice(MapReader& map, std::string_view key, Enum& out)
{
    return map.choice(
        key, out, [](std::string_view text) { return fromString<Enum>(text); }, allNames<Enum>());
}

// Unknown and duplicate keys, against the schema (config_schema.h).
inline void checkSchemaKeys(MapReader& map)
{
    map.checkKeys(keysUnder(map.path()));
}

// Which keys were written, for defaults that depend on other keys and for
// checks that span sections. `nodes` maps a YAML path to its value so a
// later check can point at the line.
struct ReadState {
    ProblemList& problems;
    ProblemList& warnings;
    std::map<std::string, YAML::Node> nodes;
    bool has(const std::string& path) const { return nodes.count(path) > 0; }
    void problem(const std::string& path, std::string message, std::string hint = {});
    void warning(const std::string& path, std::string message);
};

// Each reads one section of `top` (if present) into `config` and records
// the keys it met in `state`.
void readLoraSection(MapReader& top, RunConfig& config, ReadState& state);
void readDpoSection(MapReader& top, RunConfig& config, ReadState& state);
void readDataSection(MapReader& top, RunConfig& config, ReadState& state);
void readTrainingSection(MapReader& top, RunConfig& config, ReadState& state);
void readOutputSection(MapReader& top, RunConfig& config, ReadState& state);
// Also checks that the offload suits the sharding, when both were read.
void readDistributedSection(MapReader& top, RunConfig& config, ReadState& state);

// Rules between keys (e.g. export: adapter needs a LoRA method).
void checkCombinations(const RunConfig& config, ReadState& state);

} // namespace tb::config::detail
