#include "tokenizer/post_processor.h"

#include <map>
#include <string>

namespace tb::tokenizer::detail {

namespace {

class SequenceProcessor final : public PostProcessor {
public:
    explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts)
        : m_parts(std::move(parts))
    {
    }
    void apply(std::vector<Id>& ids) const override
    {
        for (const auto& part : m_parts)
            part->apply(ids);
    }

private:
    std::vector<std::unique_ptr<PostProcessor>> m_parts;
};

class NoIdsProcessor final : public PostProcessor {
public:
    void apply(std::vector<Id>&) const override { }
};

// The single-sequence template as a list of items: the sequence itself
// (empty `ids`) or the ids of a special token.
class TemplateProcessor final : public PostProcessor {
public:
    struct Item {
        bool isSequence;
        std::vector<Id> ids;
    };
    explicit TemplateProcessor(std::vector<Item> items)
        : m_items(std::move(items))
    {
    }
    void apply(std::vector<Id>& ids) const override
    {
        std::vector<Id> out;
        out.reserve(ids.size() + m_items.size());
        for (const Item& item : m_items) {
            if (item.isSequence)
                out.insert(out.end(), ids.begin(), ids.end());
            else
                out.insert(out.end(), item.ids.begin(), item.ids.end());
        }
        ids = std::move(out);
    }

private:
    std::vector<Item> m_items;
};

std::unique_ptr<PostProcessor> parseTemplate(const JsonNode& node)
{
    // special_tokens: {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}
    std::map<std::string, std::vector<Id>, std::less<>> specials;
    if (const auto table = node.optionalMember("special_tokens")) {
        if (!table->isObject())
            table->fail("an object of special tokens");
        for (const auto& [name, value] : table->json().items()) {
            const JsonNode entry(value, table->path() + "[" + describe(nlohmann::json(name)) + "]");
            const JsonNode idsNode = entry.member("ids", "a list of token ids");
            const std::size_t count = idsNode.arraySize("a list of token ids");
            std::vector<Id> ids;
            for (std::size_t i = 0; i < count; ++i)
                ids.push_back(static_cast<Id>(idsNode.element(i).integer(0, kMaxTokenId)));
            specials[name] = std::move(ids);
        }
    }
    constexpr std::string_view kItem =
        R"({"SpecialToken": {"id": ...}} or {"Sequence": {"id": "A"}})";
    const JsonNode single = node.member("single", "the single-sequence template (a list)");
    const std::size_t count = single.arraySize("the single-sequence template (a list)");
    std::vector<TemplateProcessor::Item> items;
    for (std::size_t i = 0; i < count; ++i) {
        const JsonNode item = single.element(i);
        if (!item.isObject())
            item.fail(kItem);
        if (const auto special = item.optionalMember("SpecialToken")) {
            const JsonNode idNode = special->member("id", "the special token's name");
            const std::string name = idNode.string("the special token's name");
            const auto it = specials.find(name);
            if (it == specials.end())
                idNode.fail("a token listed in post_processor.special_tokens");
            items.push_back({false, it->second});
        } else if (const auto sequence = item.optionalMember("Sequence")) {
            const JsonNode idNode = sequence->member("id", "\"A\"");
            if (idNode.string("\"A\"") != "A")
                idNode.fail("\"A\" (the single-sequence template has one sequence)");
            items.push_back({true, {}});
        } else {
            item.fail(kItem);
        }
    }
    return std::make_unique<TemplateProcessor>(std::move(items));
}

// BertProcessing / RobertaProcessing: {"sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}
std::unique_ptr<PostProcessor> parseClsSep(const JsonNode& node)
{
    auto tokenId = [&](std::string_view key) {
        const JsonNode pair = node.member(key, R"(a pair ["token", id])");
        if (pair.arraySize(R"(a pair ["token", id])") != 2)
            pair.fail(R"(a pair ["token", id])");
        pair.element(0).string(R"(a pair ["token", id])");
        return static_cast<Id>(pair.element(1).integer(0, kMaxTokenId));
    };
    const Id cls = tokenId("cls");
    const Id sep = tokenId("sep");
    return std::make_unique<TemplateProcessor>(
        std::vector<TemplateProcessor::Item>{{false, {cls}}, {true, {}}, {false, {sep}}});
}

} // namespace

std::unique_ptr<PostProcessor> parsePostProcessor(const JsonNode& node)
{
    const std::string type = node.typeName();
    if (type == "TemplateProcessing")
        return parseTemplate(node);
    if (type == "ByteLevel")
        return std::make_unique<NoIdsProcessor>();
    if (type == "BertProcessing" || type == "RobertaProcessing")
        return parseClsSep(node);
    if (type == "Sequence") {
        const JsonNode list = node.member("processors", "a list of post-processors");
        const std::size_t count = list.arraySize("a list of post-processors");
        std::vector<std::unique_ptr<PostProcessor>> parts;
        for (std::size_t i = 0; i < count; ++i)
            parts.push_back(parsePostProcessor(list.element(i)));
        return std::make_unique<SequenceProcessor>(std::move(parts));
    }
    node.member("type", "")
        .fail("a post-processor type we support: TemplateProcessing, "
              "ByteLevel, BertProcessing, RobertaProcessing, Sequence");
}

} // namespace tb::tokenizer::detail
