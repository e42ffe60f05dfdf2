#pragma once

#include "common/error.h"
#include "config/config_problem.h"
#include "config/run_config.h"

#include <optional>
#include <string>
#include <string_view>

namespace tb::config {

struct LoadOptions {
    // Names the document in messages; readRunConfigFile() sets it to the path.
    std::string sourceName;
    // Relative paths in the config resolve against this folder. Empty: the
    // folder of the config file, or the working directory for text.
    std::string baseDir;
    // Also require the model folder, tokenizer and data files to exist. Off
    // when a config is checked on a machine other than the one that trains.
    bool checkPaths = false;
};

// Everything a load found: the resolved config when there is no problem,
// otherwise every problem; warnings (keys that are valid but ignored) either way.
struct [[nodiscard]] LoadReport {
    std::string sourceName;
    std::optional<RunConfig> config;
    ProblemList problems;
    ProblemList warnings;

    bool ok() const { return config.has_value(); }
    common::Error error() const { return problems.toError(sourceName); }
};

// Parse and validate YAML text. Never throws.
LoadReport parseRunConfig(std::string_view yamlText, const LoadOptions& options = {});

// Same for a file; an unreadable file is one problem.
LoadReport readRunConfigFile(const std::string& path, LoadOptions options = {});

// The config or one Error listing every problem.
common::Result<RunConfig> loadRunConfig(const std::string& path, LoadOptions options = {});

} // namespace tb::config
