#pragma once

#include "common/error.h"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

// A chat template cut into text and tags, with Jinja's whitespace control
// applied as transformers configures it (trim_blocks and lstrip_blocks on),
// and the inside of each tag cut into tokens.
namespace tb::jinja {

// Where something is in the template, for messages: 1-based.
struct Location {
    std::size_t line = 1;
    std::size_t column = 1;

    std::string toString() const;
};

struct Token {
    enum class Kind { Name, String, Integer, Float, Operator, End };
    Kind kind = Kind::End;
    std::string text; // a name, the string's value, a number's digits, an operator
    Location where;
};

struct Piece {
    enum class Kind { Text, Output, Statement };
    Kind kind = Kind::Text;
    std::string text; // Text only
    std::vector<Token> tokens; // Output and Statement, ending with an End token
    Location where;
};

// The pieces of `source`; an Error names the line and column of an unclosed
// tag or string, or a character no token starts with.
common::Result<std::vector<Piece>> lex(std::string_view source);

} // namespace tb::jinja
