#pragma once

// What every libFuzzer target shares: the input as text, and the contract a
// reader of outside input keeps besides "no crash, no hang": a refusal is an
// Error that names the document it came from. A reader that breaks it aborts,
// so libFuzzer records the input like a crash.
#include "common/error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tb::fuzz {

inline std::string_view asText(const std::uint8_t* data, std::size_t size)
{
    return {reinterpret_cast<const char*>(data), size};
}

inline void requireNamed(const common::Error& error, const std::string& origin)
{
    if (error.message.find(origin) != std::string::npos)
        return;
    std::fprintf(stderr, "error does not name '%s': %s\n", origin.c_str(), error.message.c_str());
    std::abort();
}

template <typename T>
void requireValueOrNamedError(const common::Result<T>& result, const std::string& origin)
{
    if (!result.ok())
        requireNamed(result.error(), origin);
}

} // namespace tb::fuzz
