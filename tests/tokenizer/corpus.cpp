#include "corpus.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

namespace tb::tokenizer::test {

namespace {

const std::vector<std::string>& handPicked()
{
    static const std::vector<std::string> texts = {
        "",
        " ",
        "Hello world",
        "Hello, world! How are you doing today?",
        " leading space",
        "trailing space ",
        "  two leading, two trailing  ",
        "Once upon a time, there was a little girl named Lily. She loved to play outside.",
        "The quick brown fox jumps over the lazy dog's back; it's 3:45 p.m. isn't it?",
        "I'm sure they'll say we've done what you'd've done. DON'T SHOUT, IT'S LOUD!",
        "e-mail: someone@example.com, url: https://huggingface.co/docs?q=1&x=%20",
        "int main(int argc, char** argv) {\n    return argc > 1 ? 0 : -1;\n}\n",
        "def f(x):\n\tif x:\n\t\treturn [i ** 2 for i in range(10)]\n\treturn None\n",
        "for (auto& [k, v] : map) { std::cout << k << \" => \" << v << '\\n'; }",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
        "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
        "    indented four\n        indented eight\n\t\ttabs\t\tinside\t",
        "a\n\nb\n\n\nc\r\nd\re",
        "spaces                                                    end",
        "\n\n\n\n\n\n\n\n",
        "\t \t \t mixed \t\t  \n  \n",
        "line one  \n  line two   \n\n   ",
        "1234567890 12 345 6789 3.14159 -42 +7 1,000,000 0x1F 1e-5",
        "Numbers 2024-05-17, phone 555-0123, version v1.2.3, 99%",
        "١٢٣ ٤٥٦ ०१२३ ๑๒๓ Ⅻ ½ ² ③",
        "日本語のテキストです。東京は大きな都市です。",
        "中文文本，包括标点符号。我们今天去公园吧！",
        "한국어 문장입니다. 안녕하세요!",
        "مرحبا بالعالم، كيف حالك اليوم؟",
        "नमस्ते दुनिया, आप कैसे हैं? हिन्दी में लिखा पाठ।",
        "Привет, мир! Как дела? Ёжик в тумане.",
        "Γειά σου Κόσμε· ΣΊΣΥΦΟΣ σοφός",
        "עברית: שלום עולם",
        "ไทย: สวัสดีชาวโลก",
        "Ünïcödé àccénts: café, naïve, résumé, Zürich, façade",
        "Decomposed: cafe\xCC\x81 na\xC3\xAFve n\xCC\x83 A\xCC\x8A",
        "Ligatures and compatibility: ﬁ ﬂ ㎏ ℃ ｆｕｌｌｗｉｄｔｈ",
        "Emoji: 😀😃😄 👍🏽 ❤️ 🇩🇪 🇯🇵",
        "ZWJ: 👨‍👩‍👧‍👦 👩🏽‍💻 🏳️‍🌈 🧑‍🤝‍🧑",
        "Math: ∀x∈ℝ, ∃y: x² + y² ≤ 1 ⇒ |x| ≤ 1; ∑ᵢ aᵢ ≠ ∞",
        "Symbols: © ® ™ € £ ¥ § ¶ † ‡ • … ‰ ′ ″",
        "Zero width: a\xE2\x80\x8B"
        "b c\xE2\x80\x8C"
        "d e\xEF\xBB\xBF f",
        "NBSP:\xC2\xA0x\xE2\x80\x83y\xE3\x80\x80z\xC2\x85w",
        "Control: \x01\x02\x1b[31mred\x1b[0m \x7f",
        "<s>",
        "</s>",
        "<unk>",
        "<s> Hello </s>",
        "Hello<s>world</s>again",
        "<s><s></s></s>",
        "text <s>  spaced  </s> text",
        "<|begin_of_text|>Hello<|end_of_text|>",
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>",
        "<think>\nreasoning\n</think>\n\nanswer",
        "<|endoftext|>",
        "almost special: <|begin_of_tex|> <|im_start <s > </ s>",
        "<0x41> <0x0A> ▁ ▁▁ Ġ Ċ",
        "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'Ll",
        "don't, won't, can't; it's 'quoted' and \"double\"",
        "!!!??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((())) [[[]]] {{{}}} ||| \\\\\\ ///",
        "a.b,c;d:e!f?g-h_i+j=k/l\\m|n~o`p",
        "CamelCaseIdentifier snake_case_identifier kebab-case-identifier SCREAMING_CASE",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "ababababababababababababababababababababababababababababababab",
        "x",
        "\xC3\xA9",
        "\xF0\x9F\x98\x80",
    };
    return texts;
}

// Fragments mixed at random: each mix exercises boundaries between scripts,
// spaces, digits, punctuation and special tokens that hand-picked cases miss.
const std::vector<std::string>& fragments()
{
    static const std::vector<std::string> parts = {
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\n\n",
        "\r\n",
        "the",
        "The",
        "cat",
        " dog",
        "ing",
        "'s",
        "'ll",
        "'",
        "\"",
        "0",
        "12",
        "345",
        "6789",
        ".",
        ",",
        "!",
        "?",
        "(",
        ")",
        "-",
        "_",
        "/",
        "日本",
        "語",
        "中文",
        "한국",
        "مرحبا",
        "नमस्ते",
        "Привет",
        "é",
        "e\xCC\x81",
        "ß",
        "İ",
        "😀",
        "👍🏽",
        "👨‍👩‍👧",
        "🏳️‍🌈",
        "<s>",
        "</s>",
        "<unk>",
        "<|begin_of_text|>",
        "<|eot_id|>",
        "<|im_start|>",
        "<|im_end|>",
        "<think>",
        "▁",
        "Ġ",
        "\xC2\xA0",
        "\xE3\x80\x80",
        "\xE2\x80\x8B",
        "café",
        "naïve",
        "x",
        "yz",
        "ABC",
        "{",
        "}",
        ";",
        "==",
        "->",
        "::",
        "#",
        "<mask>",
        "<tab>",
        "hello",
        " world",
        "ab",
        "Once upon",
        "<pad>",
        "<|endoftext|>",
    };
    return parts;
}

std::vector<std::string> randomMixes(std::size_t count)
{
    std::mt19937 rng(20240517);
    const auto& parts = fragments();
    std::uniform_int_distribution<std::size_t> pick(0, parts.size() - 1);
    std::uniform_int_distribution<int> length(1, 24);
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < count; ++i) {
        std::string text;
        const int n = length(rng);
        for (int k = 0; k < n; ++k)
            text += parts[pick(rng)];
        texts.push_back(std::move(text));
    }
    return texts;
}

// Moves a cut back to a character boundary, so byte-offset slices of UTF-8
// text stay valid (HF only takes valid text).
std::size_t boundary(const std::string& text, std::size_t pos)
{
    pos = std::min(pos, text.size());
    while (pos > 0 && pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80)
        --pos;
    return pos;
}

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

void addDatasets(const std::string& dir, std::vector<std::string>& texts)
{
    // TinyStories: paragraphs split on blank lines, and one long chunk.
    const std::string stories = readAll(dir + "/tinystories/tinystories_val_first800.txt");
    std::size_t pos = 0, taken = 0;
    while (pos < stories.size() && taken < 150) {
        std::size_t end = stories.find("\n\n", pos);
        if (end == std::string::npos)
            end = stories.size();
        if (end > pos) {
            texts.push_back(stories.substr(pos, end - pos));
            ++taken;
        }
        pos = end + 2;
    }
    if (stories.size() > 60000)
        texts.push_back(stories.substr(0, boundary(stories, 60000)));

    const auto records =
        nlohmann::json::parse(readAll(dir + "/synthetic/instructions.json"), nullptr, false);
    if (records.is_array()) {
        for (const auto& record : records) {
            for (const char* key : {"instruction", "input", "output"}) {
                if (record.contains(key) && record[key].is_string())
                    texts.push_back(record[key].get<std::string>());
            }
        }
    }
    std::ifstream tasks(dir + "/synthetic/tasks.jsonl");
    std::string line;
    while (std::getline(tasks, line))
        texts.push_back(line); // whole JSON lines: quotes, braces, escapes
    // CSV in slices that cut through quoted fields and lines.
    const std::string dialogues = readAll(dir + "/synthetic/dialogues.csv");
    for (std::size_t at = 0; at < dialogues.size(); at += 300) {
        const std::size_t begin = boundary(dialogues, at);
        texts.push_back(dialogues.substr(begin, boundary(dialogues, begin + 280) - begin));
    }
}

} // namespace

std::vector<std::string> referenceCorpus(const std::string& datasetsDir)
{
    std::vector<std::string> texts = handPicked();
    for (std::string& text : randomMixes(400))
        texts.push_back(std::move(text));
    addDatasets(datasetsDir, texts);
    return texts;
}

} // namespace tb::tokenizer::test
