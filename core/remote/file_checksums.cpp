#include "remote/file_checksums.h"

#include "common/hex.h"
#include "launch/text_quote.h"

#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <vector>

namespace tb::remote {

namespace {

using common::Error;

struct DigestDeleter {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

} // namespace

double checksumSeconds(double timeoutSeconds, uint64_t bytes)
{
    constexpr double kSlowestBytesPerSecond = 50e6;
    return timeoutSeconds + double(bytes) / kSlowestBytesPerSecond;
}

common::Result<std::string> localSha256(const std::string& path, uint64_t length)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{"cannot read " + path, {}};
    std::unique_ptr<EVP_MD_CTX, DigestDeleter> context(EVP_MD_CTX_new());
    EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
    std::vector<char> buffer(1 << 20);
    uint64_t left = length;
    while (left > 0 && in) {
        in.read(buffer.data(), std::streamsize(std::min<uint64_t>(buffer.size(), left)));
        const auto got = size_t(in.gcount());
        EVP_DigestUpdate(context.get(), buffer.data(), got);
        left -= got;
        if (got == 0)
            break;
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned digestLength = 0;
    EVP_DigestFinal_ex(context.get(), digest, &digestLength);
    return common::hexBytes(digest, digestLength);
}

// sha256sum there of `bytes` bytes: the whole file, or its first `bytes`
// when `prefix`.
common::Result<std::string> remoteSha256(
    SshSession& session, const std::string& path, uint64_t bytes, bool prefix)
{
    const std::string quoted = launch::shellQuote(path);
    // From stdin: sha256sum escapes a name holding a backslash or newline,
    // which would put a '\\' before the hash.
    const std::string command = !prefix
        ? "sha256sum < " + quoted
        : "head -c " + std::to_string(bytes) + " < " + quoted + " | sha256sum";
    common::Result<CommandResult> answer =
        session.run(command, checksumSeconds(session.target().timeoutSeconds, bytes));
    if (!answer)
        return answer.error();
    if (answer->exitStatus != 0 || answer->output.size() < 64)
        return Error{
            session.target().describe() + ": cannot checksum " + path + ": " + answer->errorOutput,
            "is sha256sum (coreutils) installed there?"};
    return answer->output.substr(0, 64);
}

} // namespace tb::remote
