#include "variants.h"

#include <set>

namespace tb::tokenizer::test {

namespace {

using nlohmann::json;

const std::string kMeta = "\xE2\x96\x81"; // U+2581

json metaspace(const std::string& scheme, bool split)
{
    return {{"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", scheme},
        {"split", split}};
}

json regexSplit(const std::string& pattern, const std::string& behavior, bool invert = false)
{
    return {{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", behavior},
        {"invert", invert}};
}

json addedToken(int id, const std::string& content, bool special, bool normalized,
    bool lstrip = false, bool rstrip = false, bool singleWord = false)
{
    return {{"id", id}, {"content", content}, {"single_word", singleWord}, {"lstrip", lstrip},
        {"rstrip", rstrip}, {"normalized", normalized}, {"special", special}};
}

void storiesVariants(const json& base, std::vector<TokenizerVariant>& out)
{
    const json byteFallbackDecoders = {{"type", "ByteFallback"}};
    {
        json t = base;
        t["normalizer"] = nullptr;
        t["pre_tokenizer"] = metaspace("first", true);
        t["decoder"] = {{"type", "Sequence"},
            {"decoders", {byteFallbackDecoders, {{"type", "Fuse"}}, metaspace("first", true)}}};
        out.push_back({"metaspace-first", t});
    }
    {
        json t = base;
        t["normalizer"] = nullptr;
        t["pre_tokenizer"] = metaspace("always", false);
        t["decoder"] = {
            {"type", "Sequence"}, {"decoders", {metaspace("always", false), byteFallbackDecoders}}};
        out.push_back({"metaspace-always-nosplit", t});
    }
    {
        json t = base;
        t["normalizer"] = nullptr;
        const json legacy = {
            {"type", "Metaspace"}, {"replacement", kMeta}, {"add_prefix_space", true}};
        t["pre_tokenizer"] = legacy;
        t["decoder"] = legacy;
        out.push_back({"metaspace-legacy", t});
    }
    {
        json t = base;
        t["normalizer"] = {{"type", "Sequence"},
            {"normalizers",
                {{{"type", "NFKC"}}, {{"type", "Lowercase"}},
                    {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}},
                    {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
                    {{"type", "Prepend"}, {"prepend", kMeta}},
                    {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMeta}}}}};
        t["pre_tokenizer"] = {{"type", "Sequence"},
            {"pretokenizers",
                {{{"type", "Digits"}, {"individual_digits", true}},
                    {{"type", "Punctuation"}, {"behavior", "Isolated"}}}}};
        out.push_back({"normalizers-digits-punctuation", t});
    }
    {
        json t = base;
        t["pre_tokenizer"] = {{"type", "Sequence"},
            {"pretokenizers",
                {{{"type", "Split"}, {"pattern", {{"String", kMeta}}},
                     {"behavior", "MergedWithNext"}, {"invert", false}},
                    regexSplit("\\p{N}", "Contiguous"), regexSplit("[aeiou]", "MergedWithPrevious"),
                    regexSplit("x", "Removed"), regexSplit("\\p{P}+", "Isolated", true),
                    {{"type", "Digits"}, {"individual_digits", false}}}}};
        out.push_back({"split-behaviours", t});
    }
    {
        json t = base;
        t["added_tokens"].push_back(addedToken(512, "<mask>", true, false, true, true, true));
        t["added_tokens"].push_back(addedToken(513, "hello", false, true));
        t["added_tokens"].push_back(addedToken(514, " world", false, false, false, true));
        t["added_tokens"].push_back(addedToken(515, "ab", false, false, false, false, true));
        t["added_tokens"].push_back(addedToken(516, "<tab>", true, false, true, false));
        t["added_tokens"].push_back(addedToken(517, "\xE2\x96\x81the", false, true));
        t["added_tokens"].push_back(addedToken(518, "Once upon", false, true));
        out.push_back({"added-token-options", t});
    }
    {
        json t = base;
        t["model"]["byte_fallback"] = false;
        t["model"]["fuse_unk"] = true;
        t["decoder"]["decoders"].erase(1);
        out.push_back({"unk-fused", t});
    }
    {
        json t = base;
        t["model"]["byte_fallback"] = false;
        t["model"]["fuse_unk"] = false;
        out.push_back({"unk-unfused", t});
    }
    {
        json t = base;
        t["post_processor"]["single"] = {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
            {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}};
        t["post_processor"]["special_tokens"]["</s>"] = {
            {"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}};
        out.push_back({"template-bos-eos", t});
    }
    {
        json t = base;
        json merges = json::array();
        for (const auto& merge : t["model"]["merges"]) {
            const std::string line = merge.get<std::string>();
            const auto space = line.find(' ');
            merges.push_back({line.substr(0, space), line.substr(space + 1)});
        }
        t["model"]["merges"] = merges;
        t["model"]["ignore_merges"] = true;
        out.push_back({"array-merges-ignore-merges", t});
    }
    {
        json t = base;
        t["normalizer"] = nullptr;
        t["decoder"] = nullptr;
        t["post_processor"] = nullptr;
        out.push_back({"bare-model", t});
    }
}

// A byte-level BPE of the 256 byte characters plus the first Llama 3 merges
// whose parts it already has, so the vocabulary stays consistent.
json smallByteLevel(const json& llama3)
{
    json vocab = json::object();
    std::set<std::string> known;
    int next = 0;
    for (const auto& [token, id] : llama3["model"]["vocab"].items()) {
        // Single characters of the byte-level alphabet.
        const std::size_t length = token.size();
        const auto lead = static_cast<unsigned char>(token[0]);
        const bool one = length == 1 || (length == 2 && lead >= 0xC0 && lead < 0xE0);
        if (one && id.get<int>() < 256) {
            vocab[token] = id;
            known.insert(token);
        }
    }
    next = 256;
    json merges = json::array();
    for (const auto& merge : llama3["model"]["merges"]) {
        if (merges.size() >= 4000)
            break;
        std::string left, right;
        if (merge.is_string()) {
            const std::string line = merge.get<std::string>();
            const auto space = line.find(' ');
            left = line.substr(0, space);
            right = line.substr(space + 1);
        } else {
            left = merge[0];
            right = merge[1];
        }
        if (!known.contains(left) || !known.contains(right))
            continue;
        const std::string merged = left + right;
        if (!known.contains(merged)) {
            vocab[merged] = next++;
            known.insert(merged);
        }
        merges.push_back(left + " " + right);
    }
    json t = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}};
    t["added_tokens"] = {addedToken(next, "<|endoftext|>", true, false),
        addedToken(next + 1, "<|begin|>", true, false),
        addedToken(next + 2, "<pad>", true, true, false, true)};
    t["normalizer"] = nullptr;
    t["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
        {"use_regex", true}};
    t["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", true},
        {"trim_offsets", true}, {"use_regex", true}};
    t["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
        {"use_regex", true}};
    t["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
        {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", merges}};
    return t;
}

void byteLevelVariants(const json& llama3, std::vector<TokenizerVariant>& out)
{
    const json base = smallByteLevel(llama3);
    out.push_back({"bytelevel-gpt2-prefix-space", base});
    {
        json t = base;
        t["pre_tokenizer"]["add_prefix_space"] = false;
        t["post_processor"] = {{"type", "TemplateProcessing"},
            {"single",
                {{{"SpecialToken", {{"id", "<|begin|>"}, {"type_id", 0}}}},
                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair", json::array()},
            {"special_tokens",
                {{"<|begin|>",
                    {{"id", "<|begin|>"}, {"ids", {base["added_tokens"][1]["id"]}},
                        {"tokens", {"<|begin|>"}}}}}}};
        out.push_back({"bytelevel-gpt2-template", t});
    }
    {
        json t = base;
        t["normalizer"] = {{"type", "NFC"}};
        t["pre_tokenizer"] = {{"type", "Sequence"},
            {"pretokenizers",
                {regexSplit("\\s+", "Isolated", true),
                    regexSplit("(?i:'s|'t)|\\p{N}{1,3}|\\s+(?!\\S)", "Isolated"),
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                        {"use_regex", false}}}}};
        t["model"]["ignore_merges"] = true;
        out.push_back({"bytelevel-split-invert-nfc", t});
    }
}

} // namespace

std::vector<TokenizerVariant> tokenizerVariants(const json& stories, const json* llama3)
{
    std::vector<TokenizerVariant> variants;
    storiesVariants(stories, variants);
    if (llama3 != nullptr)
        byteLevelVariants(*llama3, variants);
    return variants;
}

} // namespace tb::tokenizer::test
