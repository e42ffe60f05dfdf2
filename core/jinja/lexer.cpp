#include "jinja/lexer.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tb::jinja {

std::string Location::toString() const
{
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

namespace {

constexpr std::array kOperators{"//", "**", "==", "!=", ">=", "<=", "+", "-", "*", "/", "%", "~",
    "|", ".", ",", ":", "(", ")", "[", "]", "{", "}", "=", "<", ">"};

void appendUtf8(std::uint32_t code, std::string& out)
{
    if (code < 0x80) {
        out += char(code);
    } else if (code < 0x800) {
        out += char(0xc0 | (code >> 6));
        out += char(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
        out += char(0xe0 | (code >> 12));
        out += char(0x80 | ((code >> 6) & 0x3f));
        out += char(0x80 | (code & 0x3f));
    } else {
        out += char(0xf0 | (code >> 18));
        out += char(0x80 | ((code >> 12) & 0x3f));
        out += char(0x80 | ((code >> 6) & 0x3f));
        out += char(0x80 | (code & 0x3f));
    }
}

class Lexer {
public:
    explicit Lexer(std::string_view source)
        : m_source(source)
    {
        for (std::size_t i = 0; i < source.size(); ++i)
            if (source[i] == '\n')
                m_lineStarts.push_back(i + 1);
    }

    common::Result<std::vector<Piece>> run();

private:
    Location locate(std::size_t offset) const;
    common::Error error(std::size_t offset, const std::string& what) const;
    void addText(std::string text);
    common::Status lexTag(std::size_t open, std::size_t& i, Piece::Kind kind, bool& trimNext);
    common::Result<Token> lexToken(std::size_t& i);
    common::Status lexString(std::size_t& i, std::string& out);
    bool atTagEnd(std::size_t i, const std::string& close, bool& trimNext, std::size_t& next) const;

    std::string_view m_source;
    std::vector<std::size_t> m_lineStarts{0};
    std::vector<Piece> m_pieces;
    int m_depth = 0; // open brackets inside the current tag
};

Location Lexer::locate(std::size_t offset) const
{
    const auto line = std::upper_bound(m_lineStarts.begin(), m_lineStarts.end(), offset) - 1;
    return Location{std::size_t(line - m_lineStarts.begin()) + 1, offset - *line + 1};
}

common::Error Lexer::error(std::size_t offset, const std::string& what) const
{
    return common::Error{locate(offset).toString() + ": " + what, {}};
}

void Lexer::addText(std::string text)
{
    if (text.empty())
        return;
    Piece piece;
    piece.kind = Piece::Kind::Text;
    piece.text = std::move(text);
    m_pieces.push_back(std::move(piece));
}

bool Lexer::atTagEnd(
    std::size_t i, const std::string& close, bool& trimNext, std::size_t& next) const
{
    if (m_depth > 0)
        return false;
    const std::string_view rest = m_source.substr(i);
    for (const char* marker : {"-", "+", ""}) {
        if (rest.starts_with(std::string(marker) + close)) {
            trimNext = std::string_view(marker) == "-";
            next = i + std::string_view(marker).size() + close.size();
            return true;
        }
    }
    return false;
}

common::Status Lexer::lexString(std::size_t& i, std::string& out)
{
    const std::size_t start = i;
    const char quote = m_source[i++];
    while (i < m_source.size() && m_source[i] != quote) {
        char c = m_source[i++];
        if (c != '\\' || i >= m_source.size()) {
            out += c;
            continue;
        }
        c = m_source[i++];
        const auto hex = [&](std::size_t digits) {
            std::uint32_t code = 0;
            for (std::size_t k = 0; k < digits && i < m_source.size()
                 && std::isxdigit(static_cast<unsigned char>(m_source[i]));
                 ++k)
                code = code * 16
                    + std::uint32_t(std::stoi(std::string(1, m_source[i++]), nullptr, 16));
            appendUtf8(code, out);
        };
        switch (c) {
        case 'n':
            out += '\n';
            break;
        case 't':
            out += '\t';
            break;
        case 'r':
            out += '\r';
            break;
        case 'b':
            out += '\b';
            break;
        case 'f':
            out += '\f';
            break;
        case 'v':
            out += '\v';
            break;
        case 'a':
            out += '\a';
            break;
        case '0':
            out += '\0';
            break;
        case '\\':
        case '\'':
        case '"':
            out += c;
            break;
        case '\n':
            break; // a line continuation
        case 'x':
            hex(2);
            break;
        case 'u':
            hex(4);
            break;
        case 'U':
            hex(8);
            break;
        default:
            out += '\\', out += c; // Python keeps unknown escapes as written
        }
    }
    if (i >= m_source.size())
        return error(start, "a string is not closed");
    ++i;
    return common::Ok{};
}

common::Result<Token> Lexer::lexToken(std::size_t& i)
{
    Token token;
    token.where = locate(i);
    const char c = m_source[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        const std::size_t start = i;
        while (i < m_source.size()
            && (std::isalnum(static_cast<unsigned char>(m_source[i])) || m_source[i] == '_'))
            ++i;
        token.kind = Token::Kind::Name;
        token.text = std::string(m_source.substr(start, i - start));
        return token;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
        const std::size_t start = i;
        token.kind = Token::Kind::Integer;
        while (i < m_source.size()
            && (std::isdigit(static_cast<unsigned char>(m_source[i])) || m_source[i] == '_'))
            ++i;
        const auto digitAt = [&](std::size_t at) {
            return at < m_source.size() && std::isdigit(static_cast<unsigned char>(m_source[at]));
        };
        if (i < m_source.size() && m_source[i] == '.' && digitAt(i + 1)) {
            token.kind = Token::Kind::Float;
            ++i;
            while (digitAt(i))
                ++i;
        }
        if (i < m_source.size() && (m_source[i] == 'e' || m_source[i] == 'E')) {
            const std::size_t sign =
                i + 1 < m_source.size() && (m_source[i + 1] == '+' || m_source[i + 1] == '-') ? 1
                                                                                              : 0;
            if (digitAt(i + 1 + sign)) {
                token.kind = Token::Kind::Float;
                i += 1 + sign;
                while (digitAt(i))
                    ++i;
            }
        }
        token.text = std::string(m_source.substr(start, i - start));
        std::erase(token.text, '_');
        return token;
    }
    if (c == '\'' || c == '"') {
        token.kind = Token::Kind::String;
        if (common::Status status = lexString(i, token.text); !status.ok())
            return status.error();
        return token;
    }
    for (const char* op : kOperators) {
        if (m_source.substr(i).starts_with(op)) {
            token.kind = Token::Kind::Operator;
            token.text = op;
            i += token.text.size();
            if (token.text == "(" || token.text == "[" || token.text == "{")
                ++m_depth;
            else if (token.text == ")" || token.text == "]" || token.text == "}")
                m_depth = std::max(0, m_depth - 1);
            return token;
        }
    }
    return error(i, std::string("unexpected character '") + c + "'");
}

common::Status Lexer::lexTag(std::size_t open, std::size_t& i, Piece::Kind kind, bool& trimNext)
{
    Piece piece;
    piece.kind = kind;
    piece.where = locate(open);
    const std::string close = kind == Piece::Kind::Output ? "}}" : "%}";
    const std::size_t opened = open;
    m_depth = 0;
    while (true) {
        while (i < m_source.size() && std::isspace(static_cast<unsigned char>(m_source[i])))
            ++i;
        if (i >= m_source.size())
            return error(opened, "a tag is not closed (expected '" + close + "')");
        std::size_t next = 0;
        if (atTagEnd(i, close, trimNext, next)) {
            i = next;
            break;
        }
        common::Result<Token> token = lexToken(i);
        if (!token.ok())
            return token.error();
        piece.tokens.push_back(std::move(token).value());
    }
    Token end;
    end.where = locate(i);
    piece.tokens.push_back(end);
    m_pieces.push_back(std::move(piece));
    return common::Ok{};
}

// lstrip_blocks: spaces and tabs between a line's start and a block or
// comment tag are not output.
void stripLineIndent(std::string& text, bool atTemplateStart)
{
    const std::size_t lineStart = text.find_last_of('\n');
    const std::size_t from = lineStart == std::string::npos ? 0 : lineStart + 1;
    if (lineStart == std::string::npos && !atTemplateStart)
        return;
    if (text.find_first_not_of(" \t", from) == std::string::npos)
        text.erase(from);
}

common::Result<std::vector<Piece>> Lexer::run()
{
    std::size_t i = 0;
    bool trimNext = false;
    std::string text;
    bool textStartsTemplate = true;
    while (i < m_source.size()) {
        const std::size_t open = m_source.find('{', i);
        const bool tag = open != std::string_view::npos && open + 1 < m_source.size()
            && (m_source[open + 1] == '{' || m_source[open + 1] == '%'
                || m_source[open + 1] == '#');
        const std::size_t textEnd =
            tag ? open : (open == std::string_view::npos ? m_source.size() : open + 1);
        text += std::string(m_source.substr(i, textEnd - i));
        i = textEnd;
        if (!tag)
            continue;
        const char type = m_source[open + 1];
        i = open + 2;
        const char modifier = i < m_source.size() ? m_source[i] : '\0';
        if (modifier == '-' || modifier == '+')
            ++i;
        if (trimNext) {
            text.erase(0, text.find_first_not_of(" \t\r\n\f\v"));
            trimNext = false;
        }
        if (modifier == '-')
            text.erase(text.find_last_not_of(" \t\r\n\f\v") + 1);
        else if (modifier != '+' && type != '{')
            stripLineIndent(text, textStartsTemplate);
        addText(std::move(text));
        text.clear();
        textStartsTemplate = false;
        if (type == '#') {
            const std::size_t end = m_source.find("#}", i);
            if (end == std::string_view::npos)
                return error(open, "a comment is not closed (expected '#}')");
            trimNext = end > i && m_source[end - 1] == '-';
            i = end + 2;
        } else if (common::Status status = lexTag(open, i,
                       type == '{' ? Piece::Kind::Output : Piece::Kind::Statement, trimNext);
                   !status.ok()) {
            return status.error();
        }
        // trim_blocks: the newline right after a block or comment tag goes.
        if (!trimNext && type != '{' && i < m_source.size() && m_source[i] == '\n')
            ++i;
    }
    if (trimNext)
        text.erase(0, text.find_first_not_of(" \t\r\n\f\v"));
    addText(std::move(text));
    return std::move(m_pieces);
}

} // namespace

common::Result<std::vector<Piece>> lex(std::string_view source)
{
    // keep_trailing_newline is off: one newline at the very end is dropped.
    if (source.ends_with('\n'))
        source.remove_suffix(1);
    return Lexer(source).run();
}

} // namespace tb::jinja
