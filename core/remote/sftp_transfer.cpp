#include "remote/sftp_transfer.h"

#include "launch/text_quote.h"

#include <libssh/sftp.h>
#include <openssl/evp.h>

#include <fcntl.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

namespace tb::remote {

namespace {

namespace fs = std::filesystem;
using common::Error;

constexpr size_t kChunk = 32 * 1024; // what one SFTP write or read carries
const char* const kPartSuffix = ".tbpart";

struct DigestDeleter {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

std::string hex(const unsigned char* bytes, unsigned length)
{
    static const char digits[] = "0123456789abcdef";
    std::string text;
    for (unsigned i = 0; i < length; ++i) {
        text += digits[bytes[i] >> 4];
        text += digits[bytes[i] & 15];
    }
    return text;
}

// sha256sum there, of the first `length` bytes when given; empty when the
// file is not there.
common::Result<std::string> remoteSha256(SshSession& session, const std::string& path, uint64_t length = UINT64_MAX)
{
    const std::string quoted = launch::shellQuote(path);
    // From stdin: sha256sum escapes a name holding a backslash or newline,
    // which would put a '\\' before the hash.
    const std::string command = length == UINT64_MAX
        ? "sha256sum < " + quoted
        : "head -c " + std::to_string(length) + " < " + quoted + " | sha256sum";
    common::Result<CommandResult> answer = session.run(command);
    if (!answer)
        return answer.error();
    if (answer->exitStatus != 0 || answer->output.size() < 64)
        return Error{session.target().describe() + ": cannot checksum " + path + ": " + answer->errorOutput,
            "is sha256sum (coreutils) installed there?"};
    return answer->output.substr(0, 64);
}

common::Status runChecked(SshSession& session, const std::string& command)
{
    common::Result<CommandResult> answer = session.run(command);
    if (!answer)
        return answer.error();
    if (answer->exitStatus != 0)
        return Error{session.target().describe() + ": '" + command + "' failed: " + answer->errorOutput, {}};
    return common::Ok{};
}

// The size of a file there, or -1 when there is none.
int64_t remoteSize(sftp_session sftp, const std::string& path)
{
    sftp_attributes attributes = sftp_stat(sftp, path.c_str());
    if (!attributes)
        return -1;
    const int64_t size = attributes->type == SSH_FILEXFER_TYPE_REGULAR ? int64_t(attributes->size) : -1;
    sftp_attributes_free(attributes);
    return size;
}

struct SftpFileCloser {
    void operator()(sftp_file file) const { sftp_close(file); }
};
using SftpFile = std::unique_ptr<sftp_file_struct, SftpFileCloser>;

class Transfer {
public:
    Transfer(SshSession& session, const ProgressCallback& progress, uint64_t totalBytes)
        : m_session(session)
        , m_progress(progress)
    {
        m_state.bytes = totalBytes;
    }

    // Where an earlier copy of `size` bytes stopped, when its part holds
    // the source's first bytes (checked by hash); else 0.
    template <typename PartSha, typename SourceSha>
    common::Result<uint64_t> resumeOffset(int64_t partSize, uint64_t size, PartSha partSha, SourceSha sourceSha)
    {
        if (partSize <= 0 || uint64_t(partSize) > size)
            return uint64_t(0);
        common::Result<std::string> part = partSha();
        common::Result<std::string> source = sourceSha(uint64_t(partSize));
        if (!part || !source)
            return !part ? part.error() : source.error();
        return *part == *source ? uint64_t(partSize) : uint64_t(0);
    }

    common::Status upload(const std::string& path)
    {
        common::Result<sftp_session_struct*> sftp = m_session.sftp();
        if (!sftp)
            return sftp.error();
        std::error_code error;
        const uint64_t size = fs::file_size(path, error);
        if (error)
            return Error{"cannot read " + path + ": " + error.message(), {}};
        const std::string part = path + kPartSuffix;
        if (remoteSize(*sftp, path) == int64_t(size)) {
            common::Result<std::string> theirs = remoteSha256(m_session, path);
            common::Result<std::string> ours = localSha256(path);
            if (!theirs || !ours)
                return !theirs ? theirs.error() : ours.error();
            if (*theirs == *ours) {
                ++m_summary.skipped;
                advance(path, size, size, size);
                return common::Ok{};
            }
        }
        common::Result<uint64_t> offset = resumeOffset(remoteSize(*sftp, part), size,
            [&] { return remoteSha256(m_session, part); }, [&](uint64_t n) { return localSha256(path, n); });
        if (!offset)
            return offset.error();
        if (common::Status made = runChecked(m_session, "mkdir -p -- " + launch::shellQuote(fs::path(path).parent_path().string())); !made)
            return made;
        SftpFile file(sftp_open(*sftp, part.c_str(), O_WRONLY | O_CREAT | (*offset ? 0 : O_TRUNC), 0644));
        if (!file || sftp_seek64(file.get(), *offset) != 0)
            return Error{m_session.target().describe() + ": cannot write " + part, {}};
        std::ifstream in(path, std::ios::binary);
        in.seekg(std::streamoff(*offset));
        std::vector<char> buffer(kChunk);
        uint64_t done = *offset;
        advance(path, done, size, done);
        while (done < size) {
            in.read(buffer.data(), std::streamsize(std::min<uint64_t>(kChunk, size - done)));
            const auto got = size_t(in.gcount());
            if (got == 0 || sftp_write(file.get(), buffer.data(), got) != ssize_t(got))
                return Error{m_session.target().describe() + ": writing " + part + " stopped at byte " + std::to_string(done),
                    "run it again: the copy goes on from there"};
            done += got;
            m_summary.bytesSent += got;
            advance(path, done, size, got);
        }
        file.reset();
        common::Result<std::string> theirs = remoteSha256(m_session, part);
        common::Result<std::string> ours = localSha256(path);
        if (!theirs || !ours)
            return !theirs ? theirs.error() : ours.error();
        if (*theirs != *ours)
            return Error{m_session.target().describe() + ": " + part + " does not match " + path + " (SHA-256 "
                    + *theirs + ", here " + *ours + ")",
                {}};
        ++m_summary.copied;
        m_summary.resumed += *offset > 0;
        return runChecked(m_session, "mv -f -- " + launch::shellQuote(part) + " " + launch::shellQuote(path));
    }

    common::Status download(const std::string& remotePath, uint64_t size, const std::string& localPath)
    {
        common::Result<sftp_session_struct*> sftp = m_session.sftp();
        if (!sftp)
            return sftp.error();
        std::error_code error;
        fs::create_directories(fs::path(localPath).parent_path(), error);
        if (error)
            return Error{"cannot make " + fs::path(localPath).parent_path().string() + ": " + error.message(), {}};
        common::Result<std::string> theirs = remoteSha256(m_session, remotePath);
        if (!theirs)
            return theirs.error();
        if (fs::exists(localPath) && fs::file_size(localPath, error) == size) {
            common::Result<std::string> ours = localSha256(localPath);
            if (ours && *ours == *theirs) {
                ++m_summary.skipped;
                advance(localPath, size, size, size);
                return common::Ok{};
            }
        }
        const std::string part = localPath + kPartSuffix;
        const int64_t partSize = fs::exists(part) ? int64_t(fs::file_size(part, error)) : -1;
        common::Result<uint64_t> offset = resumeOffset(partSize, size, [&] { return localSha256(part); },
            [&](uint64_t n) { return remoteSha256(m_session, remotePath, n); });
        if (!offset)
            return offset.error();
        SftpFile file(sftp_open(*sftp, remotePath.c_str(), O_RDONLY, 0));
        if (!file || sftp_seek64(file.get(), *offset) != 0)
            return Error{m_session.target().describe() + ": cannot read " + remotePath, {}};
        std::ofstream out(part, std::ios::binary | (*offset ? std::ios::app : std::ios::trunc));
        std::vector<char> buffer(kChunk);
        uint64_t done = *offset;
        advance(localPath, done, size, done);
        while (done < size) {
            const ssize_t got = sftp_read(file.get(), buffer.data(), buffer.size());
            if (got <= 0)
                return Error{m_session.target().describe() + ": reading " + remotePath + " stopped at byte " + std::to_string(done),
                    "run it again: the copy goes on from there"};
            out.write(buffer.data(), got);
            done += uint64_t(got);
            advance(localPath, done, size, uint64_t(got));
        }
        out.close();
        common::Result<std::string> ours = localSha256(part);
        if (!ours)
            return ours.error();
        if (*ours != *theirs)
            return Error{part + " does not match " + remotePath + " (SHA-256 " + *ours + ", there " + *theirs + ")", {}};
        fs::rename(part, localPath, error);
        if (error)
            return Error{"cannot rename " + part + ": " + error.message(), {}};
        ++m_summary.copied;
        m_summary.resumed += *offset > 0;
        m_summary.bytesSent += size - *offset;
        return common::Ok{};
    }

    const TransferSummary& summary() const { return m_summary; }

private:
    void advance(const std::string& path, uint64_t fileDone, uint64_t fileBytes, uint64_t added)
    {
        m_state.path = path;
        m_state.fileBytesDone = fileDone;
        m_state.fileBytes = fileBytes;
        m_state.bytesDone += added;
        if (m_progress)
            m_progress(m_state);
    }

    SshSession& m_session;
    const ProgressCallback& m_progress;
    TransferProgress m_state;
    TransferSummary m_summary;
};

} // namespace

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
    return hex(digest, digestLength);
}

bool remoteFolderExists(SshSession& session, const std::string& path)
{
    common::Result<sftp_session_struct*> sftp = session.sftp();
    if (!sftp)
        return false;
    sftp_attributes attributes = sftp_stat(*sftp, path.c_str());
    if (!attributes)
        return false;
    const bool folder = attributes->type == SSH_FILEXFER_TYPE_DIRECTORY;
    sftp_attributes_free(attributes);
    return folder;
}

common::Result<TransferSummary> uploadFiles(
    SshSession& session, const std::vector<std::string>& paths, const ProgressCallback& progress)
{
    uint64_t total = 0;
    for (const std::string& path : paths) {
        std::error_code error;
        total += fs::file_size(path, error);
        if (error)
            return Error{"cannot read " + path + ": " + error.message(), {}};
    }
    Transfer transfer(session, progress, total);
    for (const std::string& path : paths) {
        if (common::Status copied = transfer.upload(path); !copied)
            return copied.error();
    }
    return transfer.summary();
}

common::Result<TransferSummary> downloadTree(SshSession& session, const std::string& remoteDir,
    const std::string& localDir, const ProgressCallback& progress)
{
    common::Result<CommandResult> listing =
        session.run("find " + launch::shellQuote(remoteDir) + " -type f ! -name '*" + kPartSuffix + "' -printf '%s %P\\n'");
    if (!listing)
        return listing.error();
    if (listing->exitStatus != 0)
        return Error{session.target().describe() + ": cannot list " + remoteDir + ": " + listing->errorOutput, {}};
    std::vector<std::pair<std::string, uint64_t>> files;
    uint64_t total = 0;
    std::istringstream lines(listing->output);
    for (std::string line; std::getline(lines, line);) {
        const size_t space = line.find(' ');
        if (space == std::string::npos)
            continue;
        const uint64_t size = std::stoull(line.substr(0, space));
        files.emplace_back(line.substr(space + 1), size);
        total += size;
    }
    if (files.empty())
        return Error{session.target().describe() + ": " + remoteDir + " holds no files", {}};
    Transfer transfer(session, progress, total);
    for (const auto& [relative, size] : files) {
        if (common::Status copied = transfer.download(remoteDir + "/" + relative, size, localDir + "/" + relative); !copied)
            return copied.error();
    }
    return transfer.summary();
}

} // namespace tb::remote
