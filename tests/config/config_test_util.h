#pragma once

#include "config/config_loader.h"

#include <string>

// What the run-config suites share: the smallest valid config and a parse
// that names a fixed file, so messages can be compared.
namespace configtest {

// The smallest valid config; validation rows add one wrong key to it.
inline const char* const kMinimal = "model: models/tiny\n"
                                    "data:\n"
                                    "  train: train.jsonl\n";

inline tb::config::LoadReport parse(const std::string& text)
{
    tb::config::LoadOptions options;
    options.sourceName = "/runs/run.yaml";
    return tb::config::parseRunConfig(text, options);
}

inline std::string problemsText(const tb::config::LoadReport& report)
{
    return report.error().toString();
}

} // namespace configtest
