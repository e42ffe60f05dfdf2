#include "tokenizer/normalizer.h"

#include "tokenizer/pattern.h"
#include "tokenizer/unicode.h"

#include <vector>

namespace tb::tokenizer::detail {

namespace {

class SequenceNormalizer final : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
        : m_parts(std::move(parts))
    {
    }
    void normalize(std::string& text) const override
    {
        for (const auto& part : m_parts)
            part->normalize(text);
    }

private:
    std::vector<std::unique_ptr<Normalizer>> m_parts;
};

class PrependNormalizer final : public Normalizer {
public:
    explicit PrependNormalizer(std::string prefix)
        : m_prefix(std::move(prefix))
    {
    }
    void normalize(std::string& text) const override
    {
        // HF prepends to non-empty text only.
        if (!text.empty())
            text.insert(0, m_prefix);
    }

private:
    std::string m_prefix;
};

class ReplaceNormalizer final : public Normalizer {
public:
    ReplaceNormalizer(Pattern pattern, std::string content)
        : m_pattern(std::move(pattern))
        , m_content(std::move(content))
    {
    }
    void normalize(std::string& text) const override
    {
        text = m_pattern.replaceAll(text, m_content);
    }

private:
    Pattern m_pattern;
    std::string m_content;
};

class UnicodeNormalizer final : public Normalizer {
public:
    explicit UnicodeNormalizer(NormalForm form)
        : m_form(form)
    {
    }
    void normalize(std::string& text) const override { text = normalizeUnicode(text, m_form); }

private:
    NormalForm m_form;
};

class LowercaseNormalizer final : public Normalizer {
public:
    void normalize(std::string& text) const override { text = lowercase(text); }
};

class StripNormalizer final : public Normalizer {
public:
    StripNormalizer(bool left, bool right)
        : m_left(left)
        , m_right(right)
    {
    }
    void normalize(std::string& text) const override
    {
        std::size_t begin = 0, end = text.size();
        if (m_left) {
            while (begin < end) {
                std::size_t next = begin;
                if (!isWhitespace(nextCodePoint(text, next)))
                    break;
                begin = next;
            }
        }
        if (m_right) {
            while (end > begin) {
                std::size_t start = end - 1;
                while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
                    --start;
                std::size_t pos = start;
                if (!isWhitespace(nextCodePoint(text, pos)))
                    break;
                end = start;
            }
        }
        text = text.substr(begin, end - begin);
    }

private:
    bool m_left;
    bool m_right;
};

class StripAccentsNormalizer final : public Normalizer {
public:
    void normalize(std::string& text) const override
    {
        std::string out;
        out.reserve(text.size());
        std::size_t pos = 0;
        while (pos < text.size()) {
            const char32_t cp = nextCodePoint(text, pos);
            if (!isCombiningMark(cp))
                appendUtf8(out, cp);
        }
        text = std::move(out);
    }
};

} // namespace

std::unique_ptr<Normalizer> parseNormalizer(const JsonNode& node)
{
    const std::string type = node.typeName();
    if (type == "Sequence") {
        return std::make_unique<SequenceNormalizer>(sequenceParts<Normalizer>(
            node, "normalizers", "a list of normalizers", parseNormalizer));
    }
    if (type == "Prepend")
        return std::make_unique<PrependNormalizer>(
            node.member("prepend", "the text to prepend (a string)").string());
    if (type == "Replace")
        return std::make_unique<ReplaceNormalizer>(
            Pattern::parse(node.member("pattern", "a pattern")),
            node.member("content", "the replacement (a string)").string());
    if (type == "NFC")
        return std::make_unique<UnicodeNormalizer>(NormalForm::Nfc);
    if (type == "NFD")
        return std::make_unique<UnicodeNormalizer>(NormalForm::Nfd);
    if (type == "NFKC")
        return std::make_unique<UnicodeNormalizer>(NormalForm::Nfkc);
    if (type == "NFKD")
        return std::make_unique<UnicodeNormalizer>(NormalForm::Nfkd);
    if (type == "Lowercase")
        return std::make_unique<LowercaseNormalizer>();
    if (type == "Strip")
        return std::make_unique<StripNormalizer>(
            node.boolean("strip_left", true), node.boolean("strip_right", true));
    if (type == "StripAccents")
        return std::make_unique<StripAccentsNormalizer>();
    node.member("type", "")
        .fail("a normalizer type we support: Sequence, Prepend, Replace, NFC, "
              "NFD, NFKC, NFKD, Lowercase, Strip, StripAccents");
}

} // namespace tb::tokenizer::detail
