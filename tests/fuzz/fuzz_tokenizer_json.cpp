// tokenizer.json: a file that loads must also encode and decode any text
// (here: the input itself) and return only ids of its vocabulary.
#include "fuzz_support.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    using tb::tokenizer::Tokenizer;
    const std::string origin = "fuzz-tokenizer.json";
    const std::string_view text = tb::fuzz::asText(data, size);
    const auto tokenizer = Tokenizer::fromJson(text, origin);
    tb::fuzz::requireValueOrNamedError(tokenizer, origin);
    if (!tokenizer.ok())
        return 0;
    const auto ids = tokenizer->encode(text.substr(0, 256));
    (void)tokenizer->decode(ids);
    (void)tokenizer->decode(ids, true);
    return 0;
}
