// A plan YAML file (tunebench-cli plan --plan, the GUI's Open).
#include "fuzz_support.h"
#include "plan/plan_file.h"
#include "plan_estimate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string origin = "fuzz-plan.yaml";
    const auto input = tb::plan::parsePlanYaml(tb::fuzz::asText(data, size), origin);
    tb::fuzz::requireValueOrNamedError(input, origin);
    if (input.ok())
        tb::fuzz::estimateAccepted(*input);
    return 0;
}
