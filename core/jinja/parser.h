#pragma once

#include "common/error.h"
#include "jinja/ast.h"

#include <vector>

namespace tb::jinja {

// The statements of a lexed template. An Error names the line and column
// and what was expected there; a construct outside the subset this engine
// runs (macro, call, include, raw, ...) is named as such.
common::Result<Body> parse(std::vector<Piece> pieces);

// How deep expressions and blocks may nest: a template from outside cannot
// exhaust the stack.
inline constexpr int kMaxNesting = 200;

} // namespace tb::jinja
