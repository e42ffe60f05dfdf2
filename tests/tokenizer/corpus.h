#pragma once

#include <string>
#include <vector>

namespace tb::tokenizer::test {

// Texts the tokenizers are compared on: hand-picked cases (prose, code,
// other scripts, emoji with ZWJ sequences, whitespace runs, numbers,
// special-token strings), seeded random mixes of those fragments, and
// records of the repository's test datasets (tests/data/datasets).
std::vector<std::string> referenceCorpus(const std::string& datasetsDir);

} // namespace tb::tokenizer::test
