#pragma once

#include <cstddef>
#include <string>

namespace tb::common {

// Bytes as lowercase hex, two digits a byte: how digests, nonces and the run
// secret are written.
inline std::string hexBytes(const unsigned char* bytes, std::size_t size)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * size);
    for (std::size_t index = 0; index < size; ++index) {
        hex += kDigits[bytes[index] >> 4];
        hex += kDigits[bytes[index] & 15];
    }
    return hex;
}

} // namespace tb::common
