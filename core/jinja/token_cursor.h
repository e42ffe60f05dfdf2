#pragma once

#include "jinja/ast.h"
#include "jinja/parser.h"

#include <algorithm>
#include <string>
#include <vector>

// What the statement parser and the expression parser share: the tokens of
// one tag, a cursor over them, and the error that carries a place.
namespace tb::jinja::detail {

struct ParseError {
    Location where;
    std::string what;
};

// The tokens of one tag, read front to back.
class TokenCursor {
public:
    explicit TokenCursor(const std::vector<Token>& tokens)
        : m_tokens(tokens)
    {
    }

    const Token& peek(std::size_t ahead = 0) const
    {
        return m_tokens[std::min(m_index + ahead, m_tokens.size() - 1)];
    }
    const Token& next() { return m_tokens[std::min(m_index++, m_tokens.size() - 1)]; }
    bool atEnd() const { return peek().kind == Token::Kind::End; }
    bool isOperator(const char* op, std::size_t ahead = 0) const
    {
        return peek(ahead).kind == Token::Kind::Operator && peek(ahead).text == op;
    }
    bool isName(const char* name, std::size_t ahead = 0) const
    {
        return peek(ahead).kind == Token::Kind::Name && peek(ahead).text == name;
    }
    bool accept(const char* op)
    {
        if (!isOperator(op))
            return false;
        next();
        return true;
    }
    bool acceptName(const char* name)
    {
        if (!isName(name))
            return false;
        next();
        return true;
    }
    [[noreturn]] void fail(const std::string& what) const { throw ParseError{peek().where, what}; }
    void expect(const char* op)
    {
        if (!accept(op))
            fail(std::string("expected '") + op + "', got " + describe(peek()));
    }
    std::string expectName()
    {
        if (peek().kind != Token::Kind::Name)
            fail("expected a name, got " + describe(peek()));
        return next().text;
    }
    void expectEnd()
    {
        if (!atEnd())
            fail("expected the end of the tag, got " + describe(peek()));
    }
    static std::string describe(const Token& token)
    {
        return token.kind == Token::Kind::End ? std::string("the end of the tag")
                                              : "'" + token.text + "'";
    }

private:
    const std::vector<Token>& m_tokens;
    std::size_t m_index = 0;
};

// An expression at the cursor (a conditional one unless
// `allowConditional` is false: a for loop's iterable and filter).
ExprPtr parseExpression(TokenCursor& cursor, bool allowConditional = true);

// The same, or a tuple without brackets (what `set a = x, y` assigns).
ExprPtr parseTupleOrExpression(TokenCursor& cursor);

} // namespace tb::jinja::detail
