#pragma once

#include <QtGlobal>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

// The seeded text mutator the readers' fuzz tests share: byte flips,
// deletions, insertions of syntax characters and digits, duplicated spans
// and long numbers over a real input. Same seed, same mutants.
namespace tb::testutil {

struct MutationOptions {
    // Characters inserted or substituted: the syntax of the format under test.
    std::string alphabet = "{}[]:,\"'-.0123456789eE \n\t#&*!|>%@`\\aznulltrue";
    int maxEdits = 8;
    std::size_t maxErase = 8;
    std::size_t maxSpan = 40;
};

inline std::string mutateText(
    const std::string& seed, std::mt19937_64& rng, const MutationOptions& options = {})
{
    std::string text = seed;
    const auto pick = [&] { return options.alphabet[rng() % options.alphabet.size()]; };
    const int edits = 1 + static_cast<int>(rng() % static_cast<unsigned>(options.maxEdits));
    for (int e = 0; e < edits && !text.empty(); ++e) {
        const std::size_t at = rng() % text.size();
        switch (rng() % 6) {
        case 0:
            text[at] = pick();
            break;
        case 1:
            text.erase(at, 1 + rng() % options.maxErase);
            break;
        case 2:
            text.insert(at, 1, pick());
            break;
        case 3:
            text[at] = static_cast<char>(rng() % 256);
            break;
        case 4:
            text.insert(rng() % text.size(),
                text.substr(
                    at, std::min<std::size_t>(1 + rng() % options.maxSpan, text.size() - at)));
            break;
        case 5: // numbers of every size, the huge ones included
            text.insert(at, std::to_string(static_cast<std::int64_t>(rng()) >> (rng() % 60)));
            break;
        }
    }
    return text;
}

// Mutants per input: TB_FUZZ_ITERATIONS when set (long runs), else `fallback`.
inline int fuzzIterations(int fallback)
{
    const int fromEnv = qEnvironmentVariableIntValue("TB_FUZZ_ITERATIONS");
    return fromEnv > 0 ? fromEnv : fallback;
}

} // namespace tb::testutil
