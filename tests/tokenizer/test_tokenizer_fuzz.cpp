// Seeded mutation test: thousands of damaged tokenizer.json files (bytes
// flipped, cut, inserted; JSON values replaced, deleted, retyped) must each
// load or give an Error naming the file; a file that loads must encode and
// decode without crashing and return only ids of its vocabulary. Run under
// the asan preset, this also checks every read stays in bounds.
#include "../support/qt_test_paths.h"
#include "fixtures.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

#include <QFile>
#include <QTest>

#include <nlohmann/json.hpp>

#include <random>

using nlohmann::json;
using tb::tokenizer::TokenId;
using tb::tokenizer::Tokenizer;

namespace {

constexpr int kByteMutationsPerBase = 1500 / tb::tokenizer::test::kWorkDivisor;
constexpr int kJsonMutationsPerBase = 2500 / tb::tokenizer::test::kWorkDivisor;

// A small byte-level BPE with the Llama 3 split regex, so the regex,
// ByteLevel and template paths are mutated too.
std::string byteLevelBase()
{
    json vocab = json::object();
    for (int b = 0; b < 256; ++b)
        vocab[tb::tokenizer::detail::byteLevelChar(static_cast<unsigned char>(b))] = b;
    vocab["Ġt"] = 256;
    vocab["he"] = 257;
    vocab["Ġthe"] = 258;
    json t = {{"version", "1.0"}, {"normalizer", {{"type", "NFC"}}}};
    t["added_tokens"] = {
        {{"id", 259}, {"content", "<|bos|>"}, {"special", true}, {"normalized", false}},
        {{"id", 260}, {"content", "<x>"}, {"special", false}, {"normalized", true},
            {"lstrip", true}, {"rstrip", true}, {"single_word", true}}};
    t["pre_tokenizer"] = {{"type", "Sequence"},
        {"pretokenizers",
            {{{"type", "Split"},
                 {"pattern",
                     {{"Regex",
                         R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"}}},
                 {"behavior", "Isolated"}, {"invert", false}},
                {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                    {"use_regex", false}}}}};
    t["post_processor"] = {{"type", "TemplateProcessing"},
        {"single",
            {{{"SpecialToken", {{"id", "<|bos|>"}, {"type_id", 0}}}},
                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
        {"special_tokens",
            {{"<|bos|>", {{"id", "<|bos|>"}, {"ids", {259}}, {"tokens", {"<|bos|>"}}}}}}};
    t["decoder"] = {{"type", "ByteLevel"}};
    t["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"Ġ t", "h e", "Ġt he"}},
        {"ignore_merges", true}};
    return t.dump();
}

const std::vector<std::string> kTexts = {
    "",
    "Hello world, the <s> end</s>",
    "the <|bos|> <x> ab  12345\n\n\t x",
    "日本語 😀 👨‍👩‍👧 Привет",
    std::string("bad \xFF\xC3 bytes", 12),
    "▁▁ Ġ <0x41> <unk>",
};

const std::vector<std::string> kTypeNames = {"Sequence", "Prepend", "Replace", "NFC", "NFKD",
    "Lowercase", "Strip", "StripAccents", "Split", "ByteLevel", "Metaspace", "Digits",
    "Punctuation", "Whitespace", "WhitespaceSplit", "CharDelimiterSplit", "BertPreTokenizer",
    "TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteFallback", "Fuse",
    "BPEDecoder", "BPE", "Unigram", "Nope", ""};

const std::vector<json> kValues = {nullptr, true, false, 0, -1, 1, 2, 255, 511, 4194303, 4194304,
    2147483648LL, -9e18, 0.5, 1e300, "", "a", " ", "▁", "Ġ", "<s>", "<0x41>", "(", "[", "\\",
    "\\p{Zz}", "(a+)+$", "(?<=x)", "\\K", "Isolated", "first", "A", "B", "a b", json::array(),
    json::object(), json::array({"a", "b"}), json::array({1, 2, 3}),
    json::object({{"String", " "}}), json::object({{"Regex", "\\s+"}}),
    json::object({{"type", "Sequence"}})};

void collectPointers(
    const json& value, const json::json_pointer& at, std::vector<json::json_pointer>& out)
{
    out.push_back(at);
    if (value.is_object()) {
        for (const auto& [key, child] : value.items()) {
            // Vocabularies are large and uniform: sample a few entries.
            if (!at.empty() && at.back() == "vocab" && out.size() % 16 != 0)
                continue;
            collectPointers(child, at / key, out);
        }
    } else if (value.is_array()) {
        for (std::size_t i = 0; i < value.size(); ++i)
            collectPointers(value[i], at / std::to_string(i), out);
    }
}

// `pointers` lists the base document's nodes (collected once: walking the
// document for every mutation would dominate the run); a pointer that an
// earlier mutation of the same case removed is skipped.
std::string mutateJson(
    const json& base, const std::vector<json::json_pointer>& pointers, std::mt19937& rng)
{
    json document = base;
    std::uniform_int_distribution<int> count(1, 3);
    for (int n = count(rng); n > 0; --n) {
        const auto& at =
            pointers[std::uniform_int_distribution<std::size_t>(0, pointers.size() - 1)(rng)];
        const int op = std::uniform_int_distribution<int>(0, 4)(rng);
        const json& value =
            kValues[std::uniform_int_distribution<std::size_t>(0, kValues.size() - 1)(rng)];
        if (!document.contains(at))
            continue;
        if (at.empty()) {
            if (op == 0)
                document = value;
            continue;
        }
        json& parent = document[at.parent_pointer()];
        switch (op) {
        case 0:
        case 1:
            document[at] = value;
            break;
        case 2: // delete
            if (parent.is_object())
                parent.erase(at.back());
            else if (parent.is_array())
                parent.erase(static_cast<std::size_t>(std::stoul(at.back())));
            break;
        case 3: // retype a component, or duplicate an array element
            if (parent.is_object())
                parent["type"] = kTypeNames[std::uniform_int_distribution<std::size_t>(
                    0, kTypeNames.size() - 1)(rng)];
            else if (parent.is_array())
                parent.push_back(document[at]);
            break;
        default: { // copy another node over this one
            const auto& from =
                pointers[std::uniform_int_distribution<std::size_t>(0, pointers.size() - 1)(rng)];
            if (!document.contains(from))
                break;
            const json copy = document[from];
            document[at] = copy;
            break;
        }
        }
    }
    return document.dump();
}

std::string mutateBytes(const std::string& base, std::mt19937& rng)
{
    static const std::string kInteresting = "\"{}[],:\\0123456789-.eE \n\xFF\xC3\xE2\x80";
    std::string text = base;
    std::uniform_int_distribution<int> count(1, 4);
    for (int n = count(rng); n > 0 && !text.empty(); --n) {
        const std::size_t pos = std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(rng);
        const std::size_t length = std::uniform_int_distribution<std::size_t>(1, 16)(rng);
        switch (std::uniform_int_distribution<int>(0, 4)(rng)) {
        case 0:
            text[pos] = kInteresting[std::uniform_int_distribution<std::size_t>(
                0, kInteresting.size() - 1)(rng)];
            break;
        case 1:
            text.erase(pos, length);
            break;
        case 2:
            text.insert(pos, 1,
                kInteresting[std::uniform_int_distribution<std::size_t>(0, kInteresting.size() - 1)(
                    rng)]);
            break;
        case 3:
            text.insert(pos, text.substr(pos, length));
            break;
        default:
            text.resize(pos);
            break;
        }
    }
    return text;
}

struct Outcome {
    int loaded = 0;
    int rejected = 0;
    int badErrors = 0;
    int badIds = 0;
};

void exercise(const std::string& text, const std::string& source, Outcome& outcome)
{
    const auto result = Tokenizer::fromJson(text, source);
    if (!result) {
        ++outcome.rejected;
        const std::string& message = result.error().message;
        if (message.rfind(source + ": ", 0) != 0 || message.size() <= source.size() + 2)
            ++outcome.badErrors;
        return;
    }
    ++outcome.loaded;
    const Tokenizer& tok = result.value();
    for (const std::string& sample : kTexts) {
        for (bool special : {true, false}) {
            const std::vector<TokenId> ids = tok.encode(sample, special);
            for (TokenId id : ids)
                outcome.badIds += id < 0 || static_cast<std::size_t>(id) >= tok.vocabSize();
            (void)tok.decode(ids, false);
            (void)tok.decode(ids, true);
        }
    }
    const std::vector<TokenId> odd{-1, 0, 3, 259, 1 << 30, static_cast<TokenId>(tok.vocabSize())};
    (void)tok.decode(odd);
}

} // namespace

class TestTokenizerFuzz : public QObject {
    Q_OBJECT

private slots:
    void mutatedFiles_data();
    void mutatedFiles();
};

void TestTokenizerFuzz::mutatedFiles_data()
{
    QTest::addColumn<QByteArray>("base");
    QTest::addColumn<uint>("seed");
    QTest::addRow("tiny byte fallback") << QByteArray(tb::tokenizer::test::kTinyTokenizer) << 1u;
    QTest::addRow("byte-level with regex") << QByteArray::fromStdString(byteLevelBase()) << 2u;
    QFile stories(tb::test::qDemoModelDir() + QStringLiteral("/tokenizer.json"));
    QVERIFY(stories.open(QIODevice::ReadOnly));
    QTest::addRow("stories260K") << stories.readAll() << 3u;
}

void TestTokenizerFuzz::mutatedFiles()
{
    QFETCH(QByteArray, base);
    QFETCH(uint, seed);
    const std::string text = base.toStdString();
    const json document = json::parse(text);
    QVERIFY2(Tokenizer::fromJson(text, "base.json").ok(), "the unmutated base must load");
    std::mt19937 rng(seed);
    Outcome outcome;
    for (int i = 0; i < kByteMutationsPerBase; ++i)
        exercise(mutateBytes(text, rng), "mutated.json", outcome);
    std::vector<json::json_pointer> pointers;
    collectPointers(document, json::json_pointer(), pointers);
    for (int i = 0; i < kJsonMutationsPerBase; ++i)
        exercise(mutateJson(document, pointers, rng), "mutated.json", outcome);
    qInfo("%d mutated files: %d loaded (then encoded and decoded), %d rejected with an error",
        outcome.loaded + outcome.rejected, outcome.loaded, outcome.rejected);
    QCOMPARE(outcome.loaded + outcome.rejected, kByteMutationsPerBase + kJsonMutationsPerBase);
    QCOMPARE(outcome.badErrors, 0);
    QCOMPARE(outcome.badIds, 0);
    // Both paths must be exercised, or the mutations are too weak or too strong.
    QVERIFY(outcome.loaded > 100 / tb::tokenizer::test::kWorkDivisor);
    QVERIFY(outcome.rejected > 1000 / tb::tokenizer::test::kWorkDivisor);
}

QTEST_GUILESS_MAIN(TestTokenizerFuzz)
#include "test_tokenizer_fuzz.moc"
