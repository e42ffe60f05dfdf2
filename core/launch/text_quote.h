#pragma once

#include <string>
#include <string_view>

namespace tb::launch {

// `text` as one POSIX shell word: unchanged when it holds only characters no
// shell treats specially and does not start with '=' (zsh's `=cmd`), else in
// single quotes (a quote inside as '\''). A word holding a control character
// stays one word for sh, bash, dash and zsh, but not for csh, and NUL ends
// the string: SshSession::run refuses such a command.
std::string shellQuote(std::string_view text);

// `text` as a YAML scalar that every YAML 1.1 and 1.2 reader reads back as
// the same string: plain when that is unambiguous, else double-quoted with
// escapes. "no", "on", "1.5", "~" and the like are quoted: accelerate's and
// Azure ML's Python readers would turn them into booleans, numbers or null.
std::string yamlString(std::string_view text);

} // namespace tb::launch
