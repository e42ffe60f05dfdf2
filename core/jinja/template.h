#pragma once

#include "common/error.h"
#include "jinja/value.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// A Jinja template as Hugging Face chat templates are written and as
// transformers renders them (apply_chat_template): trim_blocks and
// lstrip_blocks on, the loop controls, the generation block, and
// transformers' raise_exception, strftime_now and tojson. The subset is
// what the published chat templates use: if, for (with loop, else and a
// filter), set (names, namespace attributes, blocks), expressions with
// Python's semantics, and the common filters, tests and str/dict methods.
// Macros, call blocks, includes and imports are refused when parsed.
namespace tb::jinja {

struct Rendered {
    std::string text;
    // Byte ranges [begin, end) of text written inside {% generation %}
    // blocks: the assistant's own tokens, where a template marks them.
    std::vector<std::pair<std::size_t, std::size_t>> generated;
};

// Bounds on one rendering, so a template from outside cannot run away.
struct RenderLimits {
    std::size_t maxOutputBytes = std::size_t(64) << 20;
    std::size_t maxLoopIterations = 1000000;
};

class Template {
public:
    // An Error names the line and column in the template and what was
    // expected there.
    static common::Result<Template> parse(std::string_view source);

    // The text for `variables` (a dict: messages, bos_token, ...). An Error
    // names the line and column and what failed there; a template's own
    // raise_exception comes back as its message.
    common::Result<Rendered> render(const Value& variables, const RenderLimits& limits = {}) const;

private:
    struct Parsed;
    std::shared_ptr<const Parsed> m_parsed;
};

} // namespace tb::jinja
