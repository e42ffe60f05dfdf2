#include "tokenizer/tokenizer_config.h"

#include "tokenizer/json_node.h"

#include "common/json_document.h"

#include <cmath>

namespace tb::tokenizer::detail {

namespace {

// bos_token and friends: a string, or an AddedToken object with "content".
std::optional<std::string> tokenName(const JsonNode& root, std::string_view key)
{
    const auto node = root.optionalMember(key);
    if (!node)
        return std::nullopt;
    if (node->isString())
        return node->string();
    if (node->isObject())
        return node->member("content", "the token's text").string();
    node->fail(R"(a token string or {"content": "..."})");
}

TokenizerConfig parse(const nlohmann::json& document)
{
    const JsonNode root(document, "");
    if (!root.isObject())
        root.fail("a JSON object (transformers' tokenizer_config.json)");
    TokenizerConfig config;
    config.present = true;
    config.bosToken = tokenName(root, "bos_token");
    config.eosToken = tokenName(root, "eos_token");
    config.padToken = tokenName(root, "pad_token");
    config.unkToken = tokenName(root, "unk_token");
    if (const auto node = root.optionalMember("add_bos_token"))
        config.addBosToken = node->boolean();
    if (const auto node = root.optionalMember("add_eos_token"))
        config.addEosToken = node->boolean();
    if (const auto node = root.optionalMember("chat_template")) {
        if (node->isString())
            config.hasChatTemplate = !node->string().empty();
        else if (node->isArray())
            config.hasChatTemplate = node->arraySize("a template") > 0;
        else
            node->fail("a Jinja template (a string) or a list of named templates");
    }
    config.tokenizerClass = root.string("tokenizer_class", "");
    if (const auto node = root.optionalMember("model_max_length")) {
        // transformers writes a huge float (1e30) for "no limit".
        const double value = node->number();
        if (value >= 0 && value < 9.0e18 && std::floor(value) == value)
            config.modelMaxLength = static_cast<long long>(value);
    }
    return config;
}

} // namespace

common::Result<TokenizerConfig> parseTokenizerConfig(std::string_view text, const std::string& file)
{
    try {
        const nlohmann::json document = common::parseJsonDocument(text);
        return parse(document);
    } catch (const LoadError& e) {
        return common::Error::at(file, e.path.empty() ? "" : "field '" + e.path + "'", e.message);
    } catch (const std::exception& e) {
        return common::Error::at(file, "", std::string("not valid JSON: ") + e.what());
    }
}

} // namespace tb::tokenizer::detail
