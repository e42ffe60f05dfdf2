#include "tokenizer/tokenizer.h"

#include "common/atomic_file.h"
#include "common/json_document.h"
#include "tokenizer/json_node.h"
#include "tokenizer/tokenizer_config.h"
#include "tokenizer/tokenizer_impl.h"

#include <algorithm>
#include <filesystem>
#include <vector>

namespace tb::tokenizer {

namespace {

using detail::JsonNode;
using detail::LoadError;

// 1-based line and column of a byte offset, for JSON syntax errors.
std::string lineAndColumn(std::string_view text, std::size_t offset)
{
    offset = std::min(offset, text.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

bool mentionsType(const nlohmann::json& value, std::string_view type)
{
    if (value.is_object()) {
        const auto it = value.find("type");
        if (it != value.end() && it->is_string() && it->get<std::string>() == type)
            return true;
    }
    if (value.is_object() || value.is_array()) {
        for (const auto& child : value) {
            if (mentionsType(child, type))
                return true;
        }
    }
    return false;
}

std::shared_ptr<Tokenizer::Impl> build(const nlohmann::json& document, const std::string& source)
{
    const JsonNode root(document, "");
    if (!root.isObject())
        root.fail("a JSON object with a \"model\" field (a Hugging Face tokenizer.json)");
    auto impl = std::make_shared<Tokenizer::Impl>();
    impl->sourcePath = source;

    const JsonNode modelNode = root.member("model", "the tokenizer's model (an object)");
    if (!modelNode.isObject())
        modelNode.fail("the tokenizer's model (an object)");
    if (const auto type = modelNode.optionalMember("type")) {
        if (type->string("a model type name") != "BPE")
            type->fail("\"BPE\" (WordPiece, WordLevel and Unigram models are not supported)");
    }
    impl->model = detail::BpeModel::parse(modelNode);

    if (const auto node = root.optionalMember("normalizer"))
        impl->normalizer = detail::parseNormalizer(*node);
    if (const auto node = root.optionalMember("pre_tokenizer")) {
        impl->preTokenizer = detail::parsePreTokenizer(*node);
        impl->byteLevel = mentionsType(node->json(), "ByteLevel");
    }
    if (const auto node = root.optionalMember("post_processor"))
        impl->postProcessor = detail::parsePostProcessor(*node);
    if (const auto node = root.optionalMember("decoder"))
        impl->decoder = detail::parseDecoder(*node);
    if (const auto node = root.optionalMember("added_tokens"))
        impl->added.parse(*node, impl->model->vocab());
    impl->added.prepare(impl->normalizer.get());

    std::size_t size = 0;
    for (const auto& [token, id] : impl->model->vocab())
        size = std::max(size, static_cast<std::size_t>(id) + 1);
    impl->modelTokenById.assign(size, nullptr);
    for (const auto& [token, id] : impl->model->vocab()) {
        // Two tokens with one id: keep the first in byte order, so the
        // choice does not depend on hash order.
        const std::string*& slot = impl->modelTokenById[static_cast<std::size_t>(id)];
        if (slot == nullptr || token < *slot)
            slot = &token;
    }
    for (const detail::AddedToken& token : impl->added.tokens())
        size = std::max(size, static_cast<std::size_t>(token.id) + 1);
    impl->vocabSize = size;
    if (impl->postProcessor) {
        // Every id the post-processor adds must be one the vocabulary has,
        // so encode() never returns an id the model cannot embed.
        std::vector<TokenId> added;
        impl->postProcessor->apply(added);
        for (const TokenId id : added) {
            const bool known = impl->added.byId(id) != nullptr
                || (static_cast<std::size_t>(id) < impl->modelTokenById.size()
                    && impl->modelTokenById[static_cast<std::size_t>(id)] != nullptr);
            if (!known)
                throw LoadError{"post_processor",
                    "adds token id " + std::to_string(id) + ", which is not in the vocabulary"};
        }
    }
    return impl;
}

common::Error loadError(const std::string& file, const LoadError& error)
{
    return common::Error::at(
        file, error.path.empty() ? "" : "field '" + error.path + "'", error.message);
}

} // namespace

common::Result<Tokenizer> Tokenizer::fromJson(
    std::string_view tokenizerJson, const std::string& sourceName)
{
    nlohmann::json document;
    try {
        // Bounded while parsing: the component parsers recurse, and a
        // refusal's describe() dumps what it quotes.
        document = common::parseJsonDocument(tokenizerJson);
    } catch (const nlohmann::json::parse_error& e) {
        return common::Error::at(sourceName,
            lineAndColumn(tokenizerJson, e.byte > 0 ? e.byte - 1 : 0),
            std::string("not valid JSON: ") + e.what());
    } catch (const std::exception& e) {
        return common::Error::at(sourceName, "", std::string("could not be parsed: ") + e.what());
    }
    try {
        return Tokenizer(build(document, sourceName));
    } catch (const LoadError& e) {
        return loadError(sourceName, e);
    } catch (const std::exception& e) {
        return common::Error::at(sourceName, "", std::string("could not be loaded: ") + e.what());
    }
}

common::Result<Tokenizer> Tokenizer::load(const std::string& path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path file = path;
    if (fs::is_directory(file, ec))
        file /= "tokenizer.json";
    if (!fs::is_regular_file(file, ec))
        return common::Error::at(file.string(), "",
            "no such file (expected a tokenizer.json or a model folder "
            "holding one)");
    const auto text = common::readFile(file.string());
    if (!text)
        return text.error();
    auto tokenizer = fromJson(*text, file.string());
    if (!tokenizer)
        return tokenizer.error();

    const fs::path configFile = file.parent_path() / "tokenizer_config.json";
    if (!fs::is_regular_file(configFile, ec))
        return tokenizer;
    const auto configText = common::readFile(configFile.string());
    if (!configText)
        return configText.error();
    auto config = detail::parseTokenizerConfig(*configText, configFile.string());
    if (!config)
        return config.error();
    // The shared state is ours alone until we return it.
    auto impl = std::const_pointer_cast<Impl>(tokenizer.value().m_impl);
    impl->config = std::move(config.value());
    auto idOf = [&](const std::optional<std::string>& token) -> std::optional<TokenId> {
        if (!token)
            return std::nullopt;
        return impl->lookup(*token);
    };
    impl->bosId = idOf(impl->config.bosToken);
    impl->eosId = idOf(impl->config.eosToken);
    impl->padId = idOf(impl->config.padToken);
    return tokenizer;
}

} // namespace tb::tokenizer
