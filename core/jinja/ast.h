#pragma once

#include "jinja/lexer.h"
#include "jinja/value.h"

#include <memory>
#include <string>
#include <vector>

// The parsed template: expressions and the statements that hold them.
namespace tb::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Argument {
    std::string name; // empty: positional
    ExprPtr value;
};

struct Expr {
    enum class Kind {
        Literal, // value
        Name, // name
        List, // items
        Tuple, // items
        Dict, // items: key, value, key, value, ...
        Attribute, // object.name
        Item, // object[items[0]]
        Slice, // object[items[0]:items[1]:items[2]] (null parts absent)
        Call, // object(arguments)
        Filter, // object | name(arguments)
        Test, // object is [not] name(arguments)
        Not, // items[0]
        Negate, // -items[0]
        Binary, // items[0] name items[1]: + - * / // % ** ~ == != < > <= >= in "not in" and or
        Conditional, // items[1] if items[0] else items[2]
    };
    Kind kind = Kind::Literal;
    Location where;
    Value value;
    std::string name;
    ExprPtr object;
    std::vector<ExprPtr> items;
    std::vector<Argument> arguments;
    bool negated = false; // Test: "is not"
};

struct Node;
using Body = std::vector<Node>;

struct Node {
    enum class Kind {
        Text, // text
        Output, // {{ expression }}
        If, // branches: condition (null for else) and body
        For, // targets in expression [if condition]: body, else otherwise
        Set, // targets = expression, or {% set target %}body{% endset %}
        Break,
        Continue,
        Generation, // {% generation %}body{% endgeneration %}: an assistant's own text
    };
    struct Branch {
        ExprPtr condition;
        Body body;
    };
    Kind kind = Kind::Text;
    Location where;
    std::string text;
    ExprPtr expression;
    ExprPtr condition;
    std::vector<std::string> targets; // For, Set; "ns.attr" for a namespace attribute
    std::vector<Branch> branches;
    Body body;
    Body otherwise;
};

} // namespace tb::jinja
