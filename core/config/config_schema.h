#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tb::config {

// One key of the run configuration: the single table that the reader uses to
// reject unknown keys, that docs/RUN_CONFIG.md documents and that a test
// checks against both (no key read but undocumented, none documented but
// ignored).
struct KeyInfo {
    std::string_view path; // "training.learning_rate"
    std::string_view type; // "number", "mapping", "list of paths"...
    std::string_view defaultValue; // as written in the docs; "required" when there is none
    std::string_view meaning;
};

std::span<const KeyInfo> runConfigKeys();

// Names of the keys allowed directly under `sectionPath` ("" for the top
// level, "data.columns" for a nested mapping).
std::vector<std::string> keysUnder(std::string_view sectionPath);

const KeyInfo* findKey(std::string_view path);

} // namespace tb::config
