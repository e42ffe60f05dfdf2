#pragma once

#include "config/config_problem.h"
#include "config/run_config.h"
#include "config/yaml_fields.h"

#include <map>
#include <string>

namespace tb::config::detail {

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
void readDataSection(MapReader& top, RunConfig& config, ReadState& state);
void readTrainingSection(MapReader& top, RunConfig& config, ReadState& state);
void readOutputSection(MapReader& top, RunConfig& config, ReadState& state);
// Also checks that the offload suits the sharding, when both were read.
void readDistributedSection(MapReader& top, RunConfig& config, ReadState& state);

// Rules between keys (e.g. export: adapter needs a LoRA method).
void checkCombinations(const RunConfig& config, ReadState& state);

} // namespace tb::config::detail
