// The run configuration YAML (tunebench-cli train/run --config).
#include "config/config_loader.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    tb::config::LoadOptions options;
    options.sourceName = "fuzz-run.yaml";
    const auto report = tb::config::parseRunConfig(tb::fuzz::asText(data, size), options);
    if (!report.ok())
        tb::fuzz::requireNamed(report.error(), options.sourceName);
    return 0;
}
