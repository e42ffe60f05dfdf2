#pragma once

#include "common/error.h"
#include "model/model_spec.h"

#include <string>
#include <string_view>

namespace tb::model {

// presets/models/<name>.yaml: one model's architecture numbers with the
// source they were read from. Unknown keys and duplicate keys are errors
// (naming file and key), so a typo never silently changes a count.
common::Result<ModelSpec> parseModelPreset(std::string_view yaml, const std::string& origin);
common::Result<ModelSpec> loadModelPreset(const std::string& path);

// The preset YAML for a spec (round-trips through parseModelPreset).
std::string modelPresetYaml(const ModelSpec& spec);

} // namespace tb::model
