#include "jinja/builtins.h"

#include <algorithm>
#include <climits>
#include <cmath>

// Python's binary operators on template values.
namespace tb::jinja::detail {

namespace {

Value arithmetic(const std::string& op, const Value& a, const Value& b)
{
    if (op == "+" && a.kind == Value::Kind::String && b.kind == Value::Kind::String)
        return Value::of(a.text + b.text);
    if (op == "+" && a.kind == Value::Kind::List && b.kind == Value::Kind::List) {
        ValueList joined = *a.list;
        joined.insert(joined.end(), b.list->begin(), b.list->end());
        return Value::of(std::move(joined));
    }
    if (op == "*" && a.kind == Value::Kind::String && b.kind == Value::Kind::Int) {
        const std::int64_t times = std::max<std::int64_t>(b.integer, 0);
        if (times > 0 && a.text.size() > kMaxTextBytes / std::size_t(times))
            fail("string repetition passes " + std::to_string(kMaxTextBytes) + " bytes");
        std::string out;
        for (std::int64_t i = 0; i < times; ++i)
            out += a.text;
        return Value::of(std::move(out));
    }
    if (!a.isNumber() || !b.isNumber())
        fail("unsupported operand types for " + op + ": '" + a.typeName() + "' and '" + b.typeName()
            + "'");
    const bool integers = a.kind != Value::Kind::Float && b.kind != Value::Kind::Float;
    const double x = a.number(), y = b.number();
    if ((op == "/" || op == "//" || op == "%") && y == 0)
        fail("division by zero");
    if (integers && op == "**" && y >= 0) {
        const double power = std::pow(x, y);
        if (!(std::fabs(power) < 9.2e18))
            fail("integer overflow in **");
        return Value::of(std::int64_t(std::llround(power)));
    }
    if (integers && op != "/" && op != "**") {
        const std::int64_t i = a.kind == Value::Kind::Int ? a.integer : std::int64_t(a.boolean);
        const std::int64_t j = b.kind == Value::Kind::Int ? b.integer : std::int64_t(b.boolean);
        std::int64_t r = 0;
        const bool overflow = op == "+" ? __builtin_add_overflow(i, j, &r)
            : op == "-"                 ? __builtin_sub_overflow(i, j, &r)
            : op == "*"                 ? __builtin_mul_overflow(i, j, &r)
                                        : (i == INT64_MIN && j == -1);
        if (overflow)
            fail("integer overflow in " + op);
        if (op == "+" || op == "-" || op == "*")
            return Value::of(r);
        const std::int64_t q = i / j - ((i % j != 0) && ((i < 0) != (j < 0)) ? 1 : 0);
        return op == "//" ? Value::of(q) : Value::of(i - q * j);
    }
    if (op == "+")
        return Value::of(x + y);
    if (op == "-")
        return Value::of(x - y);
    if (op == "*")
        return Value::of(x * y);
    if (op == "/")
        return Value::of(x / y);
    if (op == "//")
        return Value::of(std::floor(x / y));
    if (op == "%")
        return Value::of(x - std::floor(x / y) * y);
    return Value::of(std::pow(x, y));
}

bool contains(const Value& container, const Value& item)
{
    if (container.kind == Value::Kind::String)
        return item.kind == Value::Kind::String
            && container.text.find(item.text) != std::string::npos;
    if (container.kind == Value::Kind::Dict)
        return item.kind == Value::Kind::String && container.find(item.text) != nullptr;
    if (container.kind == Value::Kind::List)
        return std::find(container.list->begin(), container.list->end(), item)
            != container.list->end();
    fail("'in' needs a string, list or dict on its right, got " + container.typeName());
}

bool less(const Value& a, const Value& b)
{
    if (a.isNumber() && b.isNumber())
        return a.number() < b.number();
    if (a.kind == Value::Kind::String && b.kind == Value::Kind::String)
        return a.text < b.text;
    fail("cannot compare '" + a.typeName() + "' with '" + b.typeName() + "'");
}

} // namespace

Value applyOperator(const std::string& op, const Value& left, const Value& right)
{
    if (op == "~")
        return Value::of(left.str() + right.str());
    if (op == "==" || op == "!=")
        return Value::of((left == right) == (op == "=="));
    if (op == "in" || op == "not in")
        return Value::of(contains(right, left) == (op == "in"));
    if (op == "<")
        return Value::of(less(left, right));
    if (op == ">")
        return Value::of(less(right, left));
    if (op == "<=")
        return Value::of(!less(right, left));
    if (op == ">=")
        return Value::of(!less(left, right));
    return arithmetic(op, left, right);
}

} // namespace tb::jinja::detail
