#pragma once

#include <string>
#include <vector>

// Which Hugging Face model types Tunebench's trainer computes: the one list
// the trainer refuses a config.json by and the planner marks its plans,
// presets and recommendations by, so neither needs the other (the planner
// links no LibTorch).
namespace tb::model {

struct TrainerFamilySupport {
    bool runs = true;
    std::string reason; // why the trainer cannot run it; empty when it can
};

TrainerFamilySupport trainerFamilySupport(const std::string& modelType);

// The model types the trainer computes, in the order its refusals list them.
const std::vector<std::string>& trainerModelTypes();

} // namespace tb::model
