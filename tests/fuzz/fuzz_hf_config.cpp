// A Hugging Face config.json; an accepted one must count its parameters.
#include "fuzz_support.h"
#include "model/hf_config.h"
#include "model/parameter_count.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string origin = "fuzz-config.json";
    const auto spec = tb::model::parseHfConfig(tb::fuzz::asText(data, size), origin);
    tb::fuzz::requireValueOrNamedError(spec, origin);
    if (spec.ok())
        (void)tb::model::countParameters(*spec);
    return 0;
}
