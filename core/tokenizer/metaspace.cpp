#include "tokenizer/metaspace.h"

#include "tokenizer/unicode.h"

namespace tb::tokenizer::detail {

MetaspaceOptions parseMetaspaceOptions(const JsonNode& node)
{
    MetaspaceOptions options;
    if (const auto replacement = node.optionalMember("replacement")) {
        const std::string text = replacement->string("exactly one character");
        std::size_t pos = 0;
        if (text.empty())
            replacement->fail("exactly one character");
        options.replacementChar = nextCodePoint(text, pos);
        if (pos != text.size())
            replacement->fail("exactly one character");
        options.replacement = text;
    }
    if (const auto scheme = node.optionalMember("prepend_scheme")) {
        const std::string name = scheme->string("\"always\", \"never\" or \"first\"");
        if (name == "always")
            options.scheme = PrependScheme::Always;
        else if (name == "never")
            options.scheme = PrependScheme::Never;
        else if (name == "first")
            options.scheme = PrependScheme::First;
        else
            scheme->fail("\"always\", \"never\" or \"first\"");
    }
    if (!node.boolean("add_prefix_space", true))
        options.scheme = PrependScheme::Never;
    options.split = node.boolean("split", true);
    return options;
}

} // namespace tb::tokenizer::detail
