// A DeepSpeed config JSON imported into a plan.
#include "fuzz_support.h"
#include "plan/plan_file.h"
#include "plan_estimate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string origin = "fuzz-ds_config.json";
    const auto imported =
        tb::plan::parseDeepSpeedJson(tb::fuzz::asText(data, size), origin, tb::plan::PlanInput{});
    tb::fuzz::requireValueOrNamedError(imported, origin);
    if (imported.ok())
        tb::fuzz::estimateAccepted(imported->input);
    return 0;
}
