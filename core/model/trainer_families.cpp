#include "model/trainer_families.h"

#include <algorithm>

namespace tb::model {

const std::vector<std::string>& trainerModelTypes()
{
    static const std::vector<std::string> types{"llama", "mistral", "qwen2", "qwen3", "gemma2",
        "gemma3_text", "phi3", "mixtral", "qwen3_moe"};
    return types;
}

TrainerFamilySupport trainerFamilySupport(const std::string& modelType)
{
    const auto& types = trainerModelTypes();
    if (std::find(types.begin(), types.end(), modelType) != types.end())
        return {};
    if (modelType == "gpt_oss")
        return {false,
            "gpt-oss: the trainer does not compute its attention sinks, its experts' clamped "
            "SwiGLU with biases or their MXFP4 weights"};
    return {false, "model_type '" + modelType + "': the trainer does not compute it"};
}

} // namespace tb::model
