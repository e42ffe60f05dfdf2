#include "jinja/token_cursor.h"

#include <charconv>
#include <cstdlib>
#include <set>

namespace tb::jinja::detail {

namespace {

// Expressions, by Jinja's precedence (lowest first): conditional, or, and,
// not, comparisons and tests, + -, ~, * / // %, **, unary minus, then
// postfix (attribute, item, call) and filters.
class ExpressionParser {
public:
    explicit ExpressionParser(TokenCursor& cursor)
        : m_in(cursor)
    {
    }

    ExprPtr expression(bool allowConditional = true)
    {
        Guard guard(*this);
        ExprPtr value = orExpr();
        if (allowConditional && m_in.isName("if")) {
            auto node = make(Expr::Kind::Conditional);
            m_in.next();
            ExprPtr condition = orExpr();
            ExprPtr otherwise = m_in.acceptName("else") ? expression() : nullptr;
            node->items.push_back(std::move(condition));
            node->items.push_back(std::move(value));
            node->items.push_back(std::move(otherwise));
            return node;
        }
        return value;
    }

    // A tuple without brackets where one is allowed (for targets' values).
    ExprPtr tupleOrExpression()
    {
        ExprPtr first = expression();
        if (!m_in.isOperator(","))
            return first;
        auto tuple = make(Expr::Kind::Tuple);
        tuple->items.push_back(std::move(first));
        while (m_in.accept(",") && !m_in.atEnd())
            tuple->items.push_back(expression());
        return tuple;
    }

private:
    struct Guard {
        explicit Guard(ExpressionParser& p)
            : parser(p)
        {
            if (++parser.m_depth > kMaxNesting)
                parser.m_in.fail("expressions nest deeper than " + std::to_string(kMaxNesting));
        }
        ~Guard() { --parser.m_depth; }
        ExpressionParser& parser;
    };

    ExprPtr make(Expr::Kind kind) const
    {
        auto node = std::make_unique<Expr>();
        node->kind = kind;
        node->where = m_in.peek().where;
        return node;
    }

    ExprPtr binary(ExprPtr left, std::string op, ExprPtr right) const
    {
        auto node = make(Expr::Kind::Binary);
        node->name = std::move(op);
        node->items.push_back(std::move(left));
        node->items.push_back(std::move(right));
        return node;
    }

    ExprPtr orExpr()
    {
        ExprPtr left = andExpr();
        while (m_in.acceptName("or"))
            left = binary(std::move(left), "or", andExpr());
        return left;
    }

    ExprPtr andExpr()
    {
        ExprPtr left = notExpr();
        while (m_in.acceptName("and"))
            left = binary(std::move(left), "and", notExpr());
        return left;
    }

    ExprPtr notExpr()
    {
        Guard guard(*this);
        if (m_in.isName("not")) {
            auto node = make(Expr::Kind::Not);
            m_in.next();
            node->items.push_back(notExpr());
            return node;
        }
        return compare();
    }

    ExprPtr compare()
    {
        ExprPtr left = sum();
        while (true) {
            static const std::set<std::string> ops{"==", "!=", "<", ">", "<=", ">="};
            if (m_in.peek().kind == Token::Kind::Operator && ops.count(m_in.peek().text)) {
                const std::string op = m_in.next().text;
                left = binary(std::move(left), op, sum());
            } else if (m_in.acceptName("in")) {
                left = binary(std::move(left), "in", sum());
            } else if (m_in.isName("not") && m_in.isName("in", 1)) {
                m_in.next();
                m_in.next();
                left = binary(std::move(left), "not in", sum());
            } else {
                return left;
            }
        }
    }

    ExprPtr sum()
    {
        ExprPtr left = concat();
        while (m_in.isOperator("+") || m_in.isOperator("-")) {
            const std::string op = m_in.next().text;
            left = binary(std::move(left), op, concat());
        }
        return left;
    }

    ExprPtr concat()
    {
        ExprPtr left = product();
        while (m_in.accept("~"))
            left = binary(std::move(left), "~", product());
        return left;
    }

    ExprPtr product()
    {
        ExprPtr left = power();
        while (m_in.isOperator("*") || m_in.isOperator("/") || m_in.isOperator("//")
            || m_in.isOperator("%")) {
            const std::string op = m_in.next().text;
            left = binary(std::move(left), op, power());
        }
        return left;
    }

    ExprPtr power()
    {
        ExprPtr left = unary();
        while (m_in.accept("**"))
            left = binary(std::move(left), "**", unary());
        return left;
    }

    ExprPtr unary()
    {
        Guard guard(*this);
        if (m_in.isOperator("-")) {
            auto node = make(Expr::Kind::Negate);
            m_in.next();
            node->items.push_back(unary());
            return filters(std::move(node));
        }
        if (m_in.accept("+"))
            return unary();
        return filters(postfix(primary()));
    }

    std::vector<Argument> callArguments()
    {
        std::vector<Argument> arguments;
        while (!m_in.accept(")")) {
            if (!arguments.empty())
                m_in.expect(",");
            if (m_in.accept(")"))
                break;
            Argument argument;
            if (m_in.peek().kind == Token::Kind::Name && m_in.isOperator("=", 1)) {
                argument.name = m_in.next().text;
                m_in.next();
            }
            argument.value = expression();
            arguments.push_back(std::move(argument));
        }
        return arguments;
    }

    ExprPtr subscript(ExprPtr object)
    {
        std::vector<ExprPtr> parts;
        bool slice = false;
        for (int part = 0; part < 3; ++part) {
            if (m_in.isOperator(":") || m_in.isOperator("]"))
                parts.push_back(nullptr);
            else
                parts.push_back(expression());
            if (!m_in.accept(":"))
                break;
            slice = true;
        }
        if (!slice && !parts.front())
            m_in.fail("expected an index or a slice, got " + TokenCursor::describe(m_in.peek()));
        m_in.expect("]");
        auto node = make(slice ? Expr::Kind::Slice : Expr::Kind::Item);
        node->object = std::move(object);
        node->items = std::move(parts);
        node->items.resize(slice ? 3 : 1);
        return node;
    }

    ExprPtr postfix(ExprPtr object)
    {
        while (true) {
            if (m_in.accept(".")) {
                auto node = make(Expr::Kind::Attribute);
                if (m_in.peek().kind == Token::Kind::Integer) {
                    node->kind = Expr::Kind::Item;
                    node->items.push_back(primary());
                } else {
                    node->name = m_in.expectName();
                }
                node->object = std::move(object);
                object = std::move(node);
            } else if (m_in.accept("[")) {
                object = subscript(std::move(object));
            } else if (m_in.accept("(")) {
                auto node = make(Expr::Kind::Call);
                node->object = std::move(object);
                node->arguments = callArguments();
                object = std::move(node);
            } else {
                return object;
            }
        }
    }

    // A test's argument without brackets: "x is divisibleby 3".
    bool startsBareArgument() const
    {
        const Token& token = m_in.peek();
        if (token.kind == Token::Kind::Name)
            return token.text != "else" && token.text != "or" && token.text != "and"
                && token.text != "if" && token.text != "is" && token.text != "in";
        if (token.kind == Token::Kind::Operator)
            return token.text == "[" || token.text == "{" || token.text == "-";
        return token.kind != Token::Kind::End;
    }

    ExprPtr filters(ExprPtr object)
    {
        while (true) {
            if (m_in.accept("|")) {
                auto node = make(Expr::Kind::Filter);
                node->name = m_in.expectName();
                if (m_in.accept("("))
                    node->arguments = callArguments();
                node->object = std::move(object);
                object = std::move(node);
            } else if (m_in.acceptName("is")) {
                auto node = make(Expr::Kind::Test);
                node->negated = m_in.acceptName("not");
                node->name = m_in.expectName();
                if (m_in.accept("("))
                    node->arguments = callArguments();
                else if (startsBareArgument())
                    node->arguments.push_back(Argument{{}, postfix(primary())});
                node->object = std::move(object);
                object = std::move(node);
            } else {
                return object;
            }
        }
    }

    ExprPtr literal(Value value) const
    {
        auto node = make(Expr::Kind::Literal);
        node->value = std::move(value);
        return node;
    }

    ExprPtr primary()
    {
        const Token& token = m_in.peek();
        switch (token.kind) {
        case Token::Kind::String: {
            std::string text;
            auto node = make(Expr::Kind::Literal);
            while (m_in.peek().kind == Token::Kind::String) // adjacent strings join
                text += m_in.next().text;
            node->value = Value::of(std::move(text));
            return node;
        }
        case Token::Kind::Integer: {
            std::int64_t number = 0;
            const std::string digits = m_in.next().text;
            const auto [end, error] =
                std::from_chars(digits.data(), digits.data() + digits.size(), number);
            if (error != std::errc() || end != digits.data() + digits.size())
                throw ParseError{token.where, "integer '" + digits + "' is out of range"};
            return literal(Value::of(number));
        }
        case Token::Kind::Float: // Python reads a float too large for a double as inf
            return literal(Value::of(std::strtod(m_in.next().text.c_str(), nullptr)));
        case Token::Kind::Name:
            return name();
        case Token::Kind::Operator:
            return bracketed();
        case Token::Kind::End:
            break;
        }
        m_in.fail("expected an expression, got " + TokenCursor::describe(token));
    }

    ExprPtr name()
    {
        const std::string text = m_in.next().text;
        if (text == "true" || text == "True")
            return literal(Value::of(true));
        if (text == "false" || text == "False")
            return literal(Value::of(false));
        if (text == "none" || text == "None")
            return literal(Value::none());
        auto node = make(Expr::Kind::Name);
        node->name = text;
        return node;
    }

    ExprPtr bracketed()
    {
        if (m_in.accept("(")) {
            if (m_in.accept(")"))
                return make(Expr::Kind::Tuple);
            ExprPtr first = expression();
            if (m_in.accept(")"))
                return first;
            auto tuple = make(Expr::Kind::Tuple);
            tuple->items.push_back(std::move(first));
            while (m_in.accept(",") && !m_in.isOperator(")"))
                tuple->items.push_back(expression());
            m_in.expect(")");
            return tuple;
        }
        if (m_in.accept("[")) {
            auto list = make(Expr::Kind::List);
            while (!m_in.accept("]")) {
                if (!list->items.empty())
                    m_in.expect(",");
                if (m_in.accept("]"))
                    break;
                list->items.push_back(expression());
            }
            return list;
        }
        if (m_in.accept("{")) {
            auto dict = make(Expr::Kind::Dict);
            while (!m_in.accept("}")) {
                if (!dict->items.empty())
                    m_in.expect(",");
                if (m_in.accept("}"))
                    break;
                dict->items.push_back(expression());
                m_in.expect(":");
                dict->items.push_back(expression());
            }
            return dict;
        }
        m_in.fail("expected an expression, got " + TokenCursor::describe(m_in.peek()));
    }

    TokenCursor& m_in;
    int m_depth = 0;
};

} // namespace

ExprPtr parseExpression(TokenCursor& cursor, bool allowConditional)
{
    return ExpressionParser(cursor).expression(allowConditional);
}

ExprPtr parseTupleOrExpression(TokenCursor& cursor)
{
    return ExpressionParser(cursor).tupleOrExpression();
}

} // namespace tb::jinja::detail
