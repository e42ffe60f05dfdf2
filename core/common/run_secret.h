#pragma once

#include "common/error.h"

#include <string>
#include <string_view>

// The per-run secret that the ranks of one job prove to each other at the
// rendezvous (dist/join_proof.h). It reaches the ranks through their
// environment, never their command line; the launcher makes one per run and
// sends it to other nodes inside the script it runs over SSH.
namespace tb::common {

inline constexpr const char* kRunSecretVariable = "TUNEBENCH_RUN_SECRET";
inline constexpr std::size_t kRunSecretBytes = 32;

// 2 * kRunSecretBytes lowercase hex digits from the kernel's random source
// (getrandom); an Error where it gives none.
Result<std::string> newRunSecret();

// A secret as newRunSecret() makes them. The Error names the variable and
// the length and characters expected, never the value.
Status checkRunSecret(std::string_view secret);

// Cryptographically random bytes as lowercase hex (2 digits a byte).
Result<std::string> randomHex(std::size_t bytes);

} // namespace tb::common
