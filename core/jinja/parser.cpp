#include "jinja/parser.h"

#include "jinja/token_cursor.h"

#include <set>

namespace tb::jinja {

namespace {

using detail::ParseError;
using detail::TokenCursor;

// Statements: the pieces in order, each block up to the tag that ends it.
class StatementParser {
public:
    explicit StatementParser(std::vector<Piece> pieces)
        : m_pieces(std::move(pieces))
    {
    }

    Body document()
    {
        Body body = block({});
        if (m_index < m_pieces.size())
            throw ParseError{m_pieces[m_index].where,
                "'" + m_pieces[m_index].tokens.front().text + "' without its block"};
        return body;
    }

private:
    // The first word of the statement at the current piece, or "".
    std::string keyword() const
    {
        if (m_index >= m_pieces.size() || m_pieces[m_index].kind != Piece::Kind::Statement)
            return {};
        const Token& first = m_pieces[m_index].tokens.front();
        return first.kind == Token::Kind::Name ? first.text : std::string{};
    }

    Body block(const std::set<std::string>& enders)
    {
        if (++m_depth > kMaxNesting)
            throw ParseError{m_pieces[m_index - 1].where,
                "blocks nest deeper than " + std::to_string(kMaxNesting)};
        Body body;
        while (m_index < m_pieces.size() && !enders.count(keyword())) {
            Piece& piece = m_pieces[m_index];
            if (piece.kind == Piece::Kind::Text) {
                Node node;
                node.kind = Node::Kind::Text;
                node.text = std::move(piece.text);
                body.push_back(std::move(node));
                ++m_index;
            } else if (piece.kind == Piece::Kind::Output) {
                TokenCursor in(piece.tokens);
                Node node;
                node.kind = Node::Kind::Output;
                node.where = piece.where;
                node.expression = detail::parseExpression(in);
                in.expectEnd();
                body.push_back(std::move(node));
                ++m_index;
            } else {
                body.push_back(statement());
            }
        }
        --m_depth;
        return body;
    }

    void endTag(const char* name)
    {
        if (keyword() != name)
            throw ParseError{
                m_index < m_pieces.size() ? m_pieces[m_index].where : m_pieces.back().where,
                std::string("expected '{% ") + name + " %}'"};
        TokenCursor in(m_pieces[m_index].tokens);
        in.next();
        in.expectEnd();
        ++m_index;
    }

    static std::vector<std::string> targets(TokenCursor& in)
    {
        std::vector<std::string> names;
        do {
            std::string target = in.expectName();
            if (in.accept("."))
                target += "." + in.expectName();
            names.push_back(std::move(target));
        } while (in.accept(","));
        return names;
    }

    Node statement()
    {
        const Piece& piece = m_pieces[m_index++];
        TokenCursor in(piece.tokens);
        Node node;
        node.where = piece.where;
        const std::string word = in.peek().kind == Token::Kind::Name ? in.next().text : "";
        if (word == "if")
            return ifBlock(in, std::move(node));
        if (word == "for")
            return forBlock(in, std::move(node));
        if (word == "set")
            return setStatement(in, std::move(node));
        if (word == "break" || word == "continue") {
            in.expectEnd();
            node.kind = word == "break" ? Node::Kind::Break : Node::Kind::Continue;
            return node;
        }
        if (word == "generation") {
            in.expectEnd();
            node.kind = Node::Kind::Generation;
            node.body = block({"endgeneration"});
            endTag("endgeneration");
            return node;
        }
        if (word.starts_with("end") || word == "elif" || word == "else")
            throw ParseError{piece.where, "'{% " + word + " %}' without the block it ends"};
        throw ParseError{piece.where,
            word.empty() ? "expected a statement"
                         : "'{% " + word
                    + " %}' is not supported (if, for, set, break, continue "
                      "and generation are)"};
    }

    Node ifBlock(TokenCursor& in, Node node)
    {
        node.kind = Node::Kind::If;
        ExprPtr condition = detail::parseExpression(in);
        in.expectEnd();
        while (true) {
            Body body = block({"elif", "else", "endif"});
            node.branches.push_back({std::move(condition), std::move(body)});
            const std::string word = keyword();
            if (word == "endif") {
                endTag("endif");
                return node;
            }
            if (m_index >= m_pieces.size())
                break;
            TokenCursor next(m_pieces[m_index++].tokens);
            next.next();
            if (word == "elif") {
                condition = detail::parseExpression(next);
            } else {
                condition = nullptr;
                next.expectEnd();
                node.branches.push_back({nullptr, block({"endif"})});
                endTag("endif");
                return node;
            }
            next.expectEnd();
        }
        throw ParseError{node.where, "'{% if %}' is not closed by '{% endif %}'"};
    }

    Node forBlock(TokenCursor& in, Node node)
    {
        node.kind = Node::Kind::For;
        node.targets = targets(in);
        if (!in.acceptName("in"))
            in.fail("expected 'in', got " + TokenCursor::describe(in.peek()));
        node.expression = detail::parseExpression(in, false);
        if (in.acceptName("if"))
            node.condition = detail::parseExpression(in, false);
        if (in.isName("recursive"))
            in.fail("recursive loops are not supported");
        in.expectEnd();
        node.body = block({"else", "endfor"});
        if (keyword() == "else") {
            TokenCursor elseTag(m_pieces[m_index++].tokens);
            elseTag.next();
            elseTag.expectEnd();
            node.otherwise = block({"endfor"});
        }
        endTag("endfor");
        return node;
    }

    Node setStatement(TokenCursor& in, Node node)
    {
        node.kind = Node::Kind::Set;
        node.targets = targets(in);
        if (in.accept("=")) {
            node.expression = detail::parseTupleOrExpression(in);
            in.expectEnd();
            return node;
        }
        in.expectEnd();
        node.body = block({"endset"});
        endTag("endset");
        return node;
    }

    std::vector<Piece> m_pieces;
    std::size_t m_index = 0;
    int m_depth = 0;
};

} // namespace

common::Result<Body> parse(std::vector<Piece> pieces)
{
    try {
        return StatementParser(std::move(pieces)).document();
    } catch (const ParseError& error) {
        return common::Error{error.where.toString() + ": " + error.what, {}};
    }
}

} // namespace tb::jinja
