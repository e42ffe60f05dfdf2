#include "jinja/template.h"

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/parser.h"

#include <climits>
#include <cmath>
#include <map>

namespace tb::jinja {

struct Template::Parsed {
    Body body;
};

namespace {

using detail::Arguments;
using detail::RenderError;
using detail::TemplateException;

// A RenderError with the place it happened.
struct LocatedError {
    Location where;
    std::string what;
};

enum class Flow { Normal, Break, Continue };

class Renderer {
public:
    Renderer(const Value& variables, const RenderLimits& limits)
        : m_limits(limits)
    {
        m_scopes.emplace_back();
        if (variables.kind == Value::Kind::Dict)
            for (const auto& [name, value] : *variables.dict)
                m_scopes.back()[name] = value;
    }

    Rendered run(const Body& body)
    {
        execute(body);
        return std::move(m_out);
    }

private:
    using Scope = std::map<std::string, Value>;

    [[noreturn]] static void fail(const Location& where, std::string what)
    {
        throw LocatedError{where, std::move(what)};
    }

    void write(const std::string& text, const Location& where)
    {
        if (m_out.text.size() + text.size() > m_limits.maxOutputBytes)
            fail(where, "the output passes " + std::to_string(m_limits.maxOutputBytes) + " bytes");
        m_out.text += text;
    }

    Value lookup(const std::string& name) const
    {
        for (auto scope = m_scopes.rbegin(); scope != m_scopes.rend(); ++scope) {
            if (const auto it = scope->find(name); it != scope->end())
                return it->second;
        }
        return Value{};
    }

    Flow execute(const Body& body)
    {
        for (const Node& node : body) {
            if (const Flow flow = execute(node); flow != Flow::Normal)
                return flow;
        }
        return Flow::Normal;
    }

    // Errors of the statement itself (a loop over what cannot be iterated,
    // a bad unpacking) with the statement's place.
    Flow execute(const Node& node)
    {
        try {
            return executeUnlocated(node);
        } catch (const RenderError& error) {
            fail(node.where, error.what);
        }
    }

    Flow executeUnlocated(const Node& node)
    {
        switch (node.kind) {
        case Node::Kind::Text:
            write(node.text, node.where);
            return Flow::Normal;
        case Node::Kind::Output:
            write(evaluate(*node.expression).str(), node.where);
            return Flow::Normal;
        case Node::Kind::If:
            for (const Node::Branch& branch : node.branches) {
                if (!branch.condition || evaluate(*branch.condition).truthy())
                    return execute(branch.body);
            }
            return Flow::Normal;
        case Node::Kind::For:
            loop(node);
            return Flow::Normal;
        case Node::Kind::Set:
            assign(node);
            return Flow::Normal;
        case Node::Kind::Break:
            return Flow::Break;
        case Node::Kind::Continue:
            return Flow::Continue;
        case Node::Kind::Generation: {
            const std::size_t begin = m_out.text.size();
            const Flow flow = execute(node.body);
            m_out.generated.emplace_back(begin, m_out.text.size());
            return flow;
        }
        }
        return Flow::Normal;
    }

    void bind(const std::vector<std::string>& targets, const Value& value, const Location& where,
        Scope& scope)
    {
        if (targets.size() == 1) {
            scope[targets.front()] = value;
            return;
        }
        const ValueList items = value.kind == Value::Kind::List ? *value.list : ValueList{};
        if (items.size() != targets.size())
            fail(where,
                "cannot unpack " + value.typeName() + " into " + std::to_string(targets.size())
                    + " names");
        for (std::size_t i = 0; i < targets.size(); ++i)
            scope[targets[i]] = items[i];
    }

    void loop(const Node& node)
    {
        ValueList items;
        {
            const ValueList all = detail::iterate(evaluate(*node.expression));
            for (const Value& item : all) {
                if (!node.condition) {
                    items.push_back(item);
                    continue;
                }
                m_scopes.emplace_back();
                bind(node.targets, item, node.where, m_scopes.back());
                const bool keep = evaluate(*node.condition).truthy();
                m_scopes.pop_back();
                if (keep)
                    items.push_back(item);
            }
        }
        if (items.empty())
            execute(node.otherwise);
        const auto n = std::int64_t(items.size());
        for (std::int64_t i = 0; i < n; ++i) {
            if (++m_iterations > m_limits.maxLoopIterations)
                fail(node.where,
                    "loops ran more than " + std::to_string(m_limits.maxLoopIterations) + " times");
            Value info = Value::of(ValueDict{{"index", Value::of(i + 1)}, {"index0", Value::of(i)},
                {"revindex", Value::of(n - i)}, {"revindex0", Value::of(n - i - 1)},
                {"first", Value::of(i == 0)}, {"last", Value::of(i == n - 1)},
                {"length", Value::of(n)}, {"previtem", i > 0 ? items[std::size_t(i - 1)] : Value{}},
                {"nextitem", i + 1 < n ? items[std::size_t(i + 1)] : Value{}}});
            m_scopes.emplace_back();
            m_scopes.back()["loop"] = std::move(info);
            bind(node.targets, items[std::size_t(i)], node.where, m_scopes.back());
            const Flow flow = execute(node.body);
            m_scopes.pop_back();
            if (flow == Flow::Break)
                break;
        }
    }

    void assign(const Node& node)
    {
        Value value;
        if (node.expression) {
            value = evaluate(*node.expression);
        } else {
            const std::size_t begin = m_out.text.size();
            execute(node.body);
            value = Value::of(m_out.text.substr(begin));
            m_out.text.resize(begin);
        }
        const std::string& target = node.targets.front();
        if (const std::size_t dot = target.find('.'); dot != std::string::npos) {
            Value space = lookup(target.substr(0, dot));
            if (!space.isNamespace)
                fail(node.where,
                    "'" + target.substr(0, dot)
                        + "' is not a namespace: only a namespace's attributes can be set");
            space.set(target.substr(dot + 1), std::move(value));
            return;
        }
        bind(node.targets, value, node.where, m_scopes.back());
    }

    Arguments arguments(const std::vector<Argument>& given)
    {
        Arguments out;
        for (const Argument& argument : given) {
            if (argument.name.empty())
                out.positional.push_back(evaluate(*argument.value));
            else
                out.named.emplace_back(argument.name, evaluate(*argument.value));
        }
        return out;
    }

    static std::int64_t sliceBound(const Value* bound, std::int64_t size, std::int64_t fallback)
    {
        if (!bound || bound->kind == Value::Kind::None)
            return fallback;
        std::int64_t at = detail::expectInteger(*bound, "a slice bound");
        if (at < 0)
            at += size;
        return std::clamp(at, std::int64_t(-1), size);
    }

    Value slice(const Value& object, const Expr& expr)
    {
        const ValueList items = detail::iterate(object);
        const auto size = std::int64_t(items.size());
        Value parts[3];
        for (int i = 0; i < 3; ++i)
            parts[i] =
                expr.items[std::size_t(i)] ? evaluate(*expr.items[std::size_t(i)]) : Value::none();
        const std::int64_t step = parts[2].kind == Value::Kind::None
            ? 1
            : detail::expectInteger(parts[2], "a slice step");
        if (step == 0)
            fail(expr.where, "slice step cannot be zero");
        std::int64_t begin = sliceBound(&parts[0], size, step > 0 ? 0 : size - 1);
        const std::int64_t end = sliceBound(&parts[1], size, step > 0 ? size : -1);
        if (step > 0)
            begin = std::max<std::int64_t>(begin, 0);
        else
            begin = std::min(begin, size - 1);
        ValueList out;
        for (std::int64_t i = begin; step > 0 ? i < end : i > end; i += step)
            out.push_back(items[std::size_t(i)]);
        if (object.kind != Value::Kind::String)
            return Value::of(std::move(out));
        std::string text;
        for (const Value& c : out)
            text += c.text;
        return Value::of(std::move(text));
    }

    Value item(const Value& object, const Value& key, const Location& where)
    {
        if (object.isUndefined())
            fail(where, "cannot index an undefined value with " + key.repr());
        if (object.kind == Value::Kind::Dict) {
            const Value* found = key.kind == Value::Kind::String ? object.find(key.text) : nullptr;
            return found ? *found : Value{};
        }
        if (object.kind == Value::Kind::List || object.kind == Value::Kind::String) {
            const ValueList items =
                object.kind == Value::Kind::List ? *object.list : detail::iterate(object);
            std::int64_t at = detail::expectInteger(key, "an index");
            if (at < 0)
                at += std::int64_t(items.size());
            return at >= 0 && at < std::int64_t(items.size()) ? items[std::size_t(at)] : Value{};
        }
        fail(where, "'" + object.typeName() + "' cannot be indexed");
    }

    Value attribute(const Value& object, const std::string& name, const Location& where)
    {
        if (object.isUndefined())
            fail(where, "cannot read '" + name + "' of an undefined value");
        if (const Value* found = object.find(name))
            return *found;
        return Value{};
    }

    Value call(const Expr& expr)
    {
        Arguments given = arguments(expr.arguments);
        if (expr.object->kind == Expr::Kind::Attribute) {
            const Value object = evaluate(*expr.object->object);
            return detail::callMethod(object, expr.object->name, given);
        }
        if (expr.object->kind == Expr::Kind::Name)
            return detail::callFunction(expr.object->name, given);
        fail(expr.where, "only names and methods can be called");
    }

    Value binary(const Expr& expr)
    {
        const std::string& op = expr.name;
        const Value left = evaluate(*expr.items[0]);
        if (op == "and")
            return left.truthy() ? evaluate(*expr.items[1]) : left;
        if (op == "or")
            return left.truthy() ? left : evaluate(*expr.items[1]);
        return detail::applyOperator(op, left, evaluate(*expr.items[1]));
    }

    bool test(const Expr& expr)
    {
        const bool definedTest = expr.name == "defined" || expr.name == "undefined";
        if (definedTest && expr.object->kind == Expr::Kind::Name
            && detail::isGlobalFunction(expr.object->name)
            && lookup(expr.object->name).isUndefined())
            return expr.name == "defined";
        return detail::applyTest(expr.name, evaluate(*expr.object), arguments(expr.arguments));
    }

    Value evaluate(const Expr& expr)
    {
        try {
            return evaluateUnlocated(expr);
        } catch (const RenderError& error) {
            fail(expr.where, error.what);
        }
    }

    Value evaluateUnlocated(const Expr& expr)
    {
        switch (expr.kind) {
        case Expr::Kind::Literal:
            return expr.value;
        case Expr::Kind::Name:
            return lookup(expr.name);
        case Expr::Kind::List:
        case Expr::Kind::Tuple: {
            ValueList items;
            for (const ExprPtr& item : expr.items)
                items.push_back(evaluate(*item));
            return Value::of(std::move(items));
        }
        case Expr::Kind::Dict: {
            Value dict = Value::of(ValueDict{});
            for (std::size_t i = 0; i + 1 < expr.items.size(); i += 2)
                dict.set(evaluate(*expr.items[i]).str(), evaluate(*expr.items[i + 1]));
            return dict;
        }
        case Expr::Kind::Attribute:
            return attribute(evaluate(*expr.object), expr.name, expr.where);
        case Expr::Kind::Item:
            return item(evaluate(*expr.object), evaluate(*expr.items[0]), expr.where);
        case Expr::Kind::Slice:
            return slice(evaluate(*expr.object), expr);
        case Expr::Kind::Call:
            return call(expr);
        case Expr::Kind::Filter:
            return detail::applyFilter(
                expr.name, evaluate(*expr.object), arguments(expr.arguments));
        case Expr::Kind::Test:
            return Value::of(test(expr) != expr.negated);
        case Expr::Kind::Not:
            return Value::of(!evaluate(*expr.items[0]).truthy());
        case Expr::Kind::Negate: {
            const Value v = evaluate(*expr.items[0]);
            if (v.kind == Value::Kind::Float)
                return Value::of(-v.real);
            const std::int64_t n = detail::expectInteger(v, "unary minus's operand");
            if (n == INT64_MIN)
                fail(expr.where, "integer overflow in unary minus");
            return Value::of(-n);
        }
        case Expr::Kind::Binary:
            return binary(expr);
        case Expr::Kind::Conditional:
            if (evaluate(*expr.items[0]).truthy())
                return evaluate(*expr.items[1]);
            return expr.items[2] ? evaluate(*expr.items[2]) : Value{};
        }
        return Value{};
    }

    RenderLimits m_limits;
    std::vector<Scope> m_scopes;
    Rendered m_out;
    std::size_t m_iterations = 0;
};

} // namespace

common::Result<Template> Template::parse(std::string_view source)
{
    common::Result<std::vector<Piece>> pieces = lex(source);
    if (!pieces.ok())
        return pieces.error();
    common::Result<Body> body = jinja::parse(std::move(pieces).value());
    if (!body.ok())
        return body.error();
    Template parsed;
    auto holder = std::make_shared<Parsed>();
    holder->body = std::move(body).value();
    parsed.m_parsed = std::move(holder);
    return parsed;
}

common::Result<Rendered> Template::render(const Value& variables, const RenderLimits& limits) const
{
    try {
        return Renderer(variables, limits).run(m_parsed->body);
    } catch (const LocatedError& error) {
        return common::Error{error.where.toString() + ": " + error.what, {}};
    } catch (const TemplateException& raised) {
        return common::Error{"the template raised: " + raised.message, {}};
    } catch (const RenderError& error) {
        return common::Error{error.what, {}};
    }
}

} // namespace tb::jinja
