// A model preset YAML (presets/models, or one a user adds).
#include "fuzz_support.h"
#include "model/model_preset.h"
#include "model/parameter_count.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string origin = "fuzz-model.yaml";
    const auto spec = tb::model::parseModelPreset(tb::fuzz::asText(data, size), origin);
    tb::fuzz::requireValueOrNamedError(spec, origin);
    if (spec.ok())
        (void)tb::model::countParameters(*spec);
    return 0;
}
