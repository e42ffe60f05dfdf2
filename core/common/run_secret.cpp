#include "common/run_secret.h"

#include "common/hex.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/random.h>
#include <vector>

namespace tb::common {

Result<std::string> randomHex(std::size_t bytes)
{
    std::vector<unsigned char> buffer(bytes);
    std::size_t filled = 0;
    while (filled < bytes) {
        const ssize_t got = getrandom(buffer.data() + filled, bytes - filled, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return Error{std::string("the kernel gave no random bytes (getrandom: ")
                    + std::strerror(errno) + ")",
                {}};
        filled += std::size_t(got);
    }
    return hexBytes(buffer.data(), buffer.size());
}

Result<std::string> newRunSecret()
{
    return randomHex(kRunSecretBytes);
}

Status checkRunSecret(std::string_view secret)
{
    const bool hex = std::all_of(secret.begin(), secret.end(),
        [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    if (secret.size() == 2 * kRunSecretBytes && hex)
        return Ok{};
    return Error{std::string("environment variable ") + kRunSecretVariable + ": "
            + std::to_string(secret.size()) + " characters"
            + (hex ? "" : ", not all lowercase hex digits") + ", expected "
            + std::to_string(2 * kRunSecretBytes)
            + " lowercase hex digits (the value is not shown)",
        "unset it to let tunebench-cli launch make one, or make one with `openssl rand -hex 32`"};
}

} // namespace tb::common
