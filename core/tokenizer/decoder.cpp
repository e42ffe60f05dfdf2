#include "tokenizer/decoder.h"

#include "tokenizer/metaspace.h"
#include "tokenizer/pattern.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

#include <optional>

namespace tb::tokenizer::detail {

namespace {

class SequenceDecoder final : public Decoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts)
        : m_parts(std::move(parts))
    {
    }
    void decode(std::vector<std::string>& tokens) const override
    {
        for (const auto& part : m_parts)
            part->decode(tokens);
    }

private:
    std::vector<std::unique_ptr<Decoder>> m_parts;
};

// Characters of the byte-level alphabet back to bytes; a token with any other
// character is kept as its own UTF-8. The bytes are then read as UTF-8 with
// bad sequences replaced, like String::from_utf8_lossy.
class ByteLevelDecoder final : public Decoder {
public:
    void decode(std::vector<std::string>& tokens) const override
    {
        std::string bytes;
        for (const std::string& token : tokens) {
            const std::size_t mark = bytes.size();
            std::size_t pos = 0;
            bool mapped = true;
            while (pos < token.size()) {
                const int byte = byteLevelByte(nextCodePoint(token, pos));
                if (byte < 0) {
                    mapped = false;
                    break;
                }
                bytes += static_cast<char>(byte);
            }
            if (!mapped) {
                bytes.resize(mark);
                bytes += token;
            }
        }
        tokens.assign(1, toValidUtf8(bytes));
    }
};

// "<0xNN>" tokens back to bytes; a run of them that is not valid UTF-8 turns
// into one U+FFFD per byte, as HF does.
class ByteFallbackDecoder final : public Decoder {
public:
    void decode(std::vector<std::string>& tokens) const override
    {
        std::vector<std::string> out;
        out.reserve(tokens.size());
        std::string pending;
        auto flush = [&] {
            if (pending.empty())
                return;
            if (isValidUtf8(pending)) {
                out.push_back(pending);
            } else {
                for (std::size_t i = 0; i < pending.size(); ++i)
                    out.emplace_back("\xEF\xBF\xBD");
            }
            pending.clear();
        };
        for (std::string& token : tokens) {
            if (const auto byte = parseByteToken(token)) {
                pending += static_cast<char>(*byte);
                continue;
            }
            flush();
            out.push_back(std::move(token));
        }
        flush();
        tokens = std::move(out);
    }

private:
    static int hexValue(char c)
    {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    }
    // Rust's u8::from_str_radix(.., 16) on the two characters: hex digits,
    // or a '+' sign and one digit.
    static std::optional<unsigned char> parseByteToken(const std::string& token)
    {
        if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>')
            return std::nullopt;
        const int hi = hexValue(token[3]), lo = hexValue(token[4]);
        if (token[3] == '+' && lo >= 0)
            return static_cast<unsigned char>(lo);
        if (hi < 0 || lo < 0)
            return std::nullopt;
        return static_cast<unsigned char>(hi * 16 + lo);
    }
};

class FuseDecoder final : public Decoder {
public:
    void decode(std::vector<std::string>& tokens) const override
    {
        std::string joined;
        for (const std::string& token : tokens)
            joined += token;
        tokens.assign(1, std::move(joined));
    }
};

// Removes up to `start` leading and `stop` trailing `content` characters
// from each token.
class StripDecoder final : public Decoder {
public:
    StripDecoder(char32_t content, std::size_t start, std::size_t stop)
        : m_content(content)
        , m_start(start)
        , m_stop(stop)
    {
    }
    void decode(std::vector<std::string>& tokens) const override
    {
        for (std::string& token : tokens) {
            std::vector<std::pair<std::size_t, char32_t>> chars; // byte offset, code point
            std::size_t pos = 0;
            while (pos < token.size()) {
                const std::size_t at = pos;
                chars.emplace_back(at, nextCodePoint(token, pos));
            }
            std::size_t first = 0;
            while (first < chars.size() && first < m_start && chars[first].second == m_content)
                ++first;
            std::size_t last = chars.size(); // one past the kept characters
            std::size_t cut = 0;
            while (last > 0 && cut < m_stop && chars[last - 1].second == m_content) {
                --last;
                ++cut;
            }
            if (last <= first) {
                token.clear();
                continue;
            }
            const std::size_t begin = chars[first].first;
            const std::size_t end = last < chars.size() ? chars[last].first : token.size();
            token = token.substr(begin, end - begin);
        }
    }

private:
    char32_t m_content;
    std::size_t m_start;
    std::size_t m_stop;
};

class ReplaceDecoder final : public Decoder {
public:
    ReplaceDecoder(Pattern pattern, std::string content)
        : m_pattern(std::move(pattern))
        , m_content(std::move(content))
    {
    }
    void decode(std::vector<std::string>& tokens) const override
    {
        for (std::string& token : tokens)
            token = m_pattern.replaceAll(token, m_content);
    }

private:
    Pattern m_pattern;
    std::string m_content;
};

// The replacement character becomes a space; in the first token HF drops it
// instead (all of them) unless the prepend scheme is "never".
class MetaspaceDecoder final : public Decoder {
public:
    explicit MetaspaceDecoder(MetaspaceOptions options)
        : m_options(std::move(options))
    {
    }
    void decode(std::vector<std::string>& tokens) const override
    {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const bool drop = i == 0 && m_options.scheme != PrependScheme::Never;
            std::string out;
            std::size_t pos = 0;
            const std::string& token = tokens[i];
            while (pos < token.size()) {
                const std::size_t at = pos;
                const char32_t cp = nextCodePoint(token, pos);
                if (cp == m_options.replacementChar) {
                    if (!drop)
                        out += ' ';
                } else {
                    out.append(token, at, pos - at);
                }
            }
            tokens[i] = std::move(out);
        }
    }

private:
    MetaspaceOptions m_options;
};

// BPEDecoder: the end-of-word suffix becomes a space (none after the last).
class SuffixDecoder final : public Decoder {
public:
    explicit SuffixDecoder(std::string suffix)
        : m_suffix(std::move(suffix))
    {
    }
    void decode(std::vector<std::string>& tokens) const override
    {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const std::string replacement = i + 1 == tokens.size() ? "" : " ";
            tokens[i] = Pattern::literal(m_suffix).replaceAll(tokens[i], replacement);
        }
    }

private:
    std::string m_suffix;
};

} // namespace

std::unique_ptr<Decoder> parseDecoder(const JsonNode& node)
{
    const std::string type = node.typeName();
    if (type == "Sequence") {
        return std::make_unique<SequenceDecoder>(
            sequenceParts<Decoder>(node, "decoders", "a list of decoders", parseDecoder));
    }
    if (type == "ByteLevel")
        return std::make_unique<ByteLevelDecoder>();
    if (type == "ByteFallback")
        return std::make_unique<ByteFallbackDecoder>();
    if (type == "Fuse")
        return std::make_unique<FuseDecoder>();
    if (type == "Strip") {
        const char32_t content = node.member("content", "one character").character();
        constexpr long long kMaxStrip = 1 << 20;
        const auto start = node.member("start", "a count").integer(0, kMaxStrip);
        const auto stop = node.member("stop", "a count").integer(0, kMaxStrip);
        return std::make_unique<StripDecoder>(
            content, static_cast<std::size_t>(start), static_cast<std::size_t>(stop));
    }
    if (type == "Replace")
        return std::make_unique<ReplaceDecoder>(Pattern::parse(node.member("pattern", "a pattern")),
            node.member("content", "the replacement (a string)").string());
    if (type == "Metaspace")
        return std::make_unique<MetaspaceDecoder>(parseMetaspaceOptions(node));
    if (type == "BPEDecoder")
        return std::make_unique<SuffixDecoder>(node.string("suffix", "</w>"));
    node.member("type", "")
        .fail("a decoder type we support: Sequence, ByteLevel, ByteFallback, "
              "Fuse, Strip, Replace, Metaspace, BPEDecoder");
}

} // namespace tb::tokenizer::detail
