#pragma once

#include "tokenizer/json_node.h"

#include <string>

namespace tb::tokenizer::detail {

enum class PrependScheme { Always, Never, First };

// Settings shared by the Metaspace pre-tokenizer and decoder.
struct MetaspaceOptions {
    std::string replacement = "\xE2\x96\x81"; // U+2581 '▁'
    char32_t replacementChar = 0x2581;
    PrependScheme scheme = PrependScheme::Always;
    bool split = true;
};

// Reads "replacement", "prepend_scheme", "split" and the older
// "add_prefix_space" (false means never prepend).
MetaspaceOptions parseMetaspaceOptions(const JsonNode& node);

} // namespace tb::tokenizer::detail
