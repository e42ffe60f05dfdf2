// An accelerate config YAML imported into a plan.
#include "fuzz_support.h"
#include "plan/plan_file.h"
#include "plan_estimate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string origin = "fuzz-accelerate.yaml";
    tb::plan::PlanInput base;
    base.vmSize = "Standard_ND96isr_H100_v5";
    base.gpusPerNode = 0;
    const auto imported = tb::plan::parseAccelerateYaml(tb::fuzz::asText(data, size), origin, base);
    tb::fuzz::requireValueOrNamedError(imported, origin);
    if (imported.ok())
        tb::fuzz::estimateAccepted(imported->input);
    return 0;
}
