#pragma once

#include "common/error.h"
#include "config/run_config.h"

#include <nlohmann/json.hpp>

#include <string>

namespace tb::config {

// The resolved config as YAML with every key written out (defaults included),
// in the schema's order; parseRunConfig() reads it back to an equal config.
std::string toYaml(const RunConfig& config);

// The same tree as JSON: the `config` object of the run_start event.
nlohmann::json toJson(const RunConfig& config);

// toYaml() written atomically (the run folder keeps the config it ran with).
common::Status saveRunConfig(const std::string& path, const RunConfig& config);

} // namespace tb::config
