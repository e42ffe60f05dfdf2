#include "remote/sftp_transfer.h"

#include "common/atomic_file.h"
#include "common/text.h"
#include "launch/text_quote.h"
#include "remote/file_checksums.h"
#include "remote/remote_names.h"
#include "remote/sftp_listing.h"

#include <libssh/sftp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

namespace tb::remote {

namespace {

namespace fs = std::filesystem;
using common::Error;

constexpr size_t kChunk = size_t{32} << 10; // what one SFTP read carries
constexpr size_t kInFlight = 32; // reads asked for on a channel before the first answer
// A download of this much or more is striped over kStreams SFTP channels:
// libssh 0.10 keeps a channel's receive window near 1 MB and has no call to
// widen it, so one channel carries about 1 MB a round trip (12 MB/s at 50 ms).
constexpr uint64_t kStripeFrom = uint64_t{8} << 20;
constexpr size_t kStreams = 4;

common::Status runChecked(SshSession& session, const std::string& command)
{
    common::Result<CommandResult> answer = session.run(command);
    if (!answer)
        return answer.error();
    if (answer->exitStatus != 0)
        return Error{
            session.target().describe() + ": '" + command + "' failed: " + answer->errorOutput, {}};
    return common::Ok{};
}

// The size of a file there, or -1 when there is none.
int64_t remoteSize(SshSession& session, sftp_session sftp, const std::string& path)
{
    const SshSession::Bounded bounded(session);
    sftp_attributes attributes = sftp_stat(sftp, path.c_str());
    if (!attributes)
        return -1;
    const int64_t size =
        attributes->type == SSH_FILEXFER_TYPE_REGULAR ? int64_t(attributes->size) : -1;
    sftp_attributes_free(attributes);
    return size;
}

struct LocalFile {
    explicit LocalFile(int fd)
        : m_fd(fd)
    {
    }
    ~LocalFile()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    LocalFile(const LocalFile&) = delete;
    LocalFile& operator=(const LocalFile&) = delete;
    explicit operator bool() const { return m_fd >= 0; }
    int get() const { return m_fd; }
    int release() { return std::exchange(m_fd, -1); }

private:
    int m_fd;
};

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
    common::Result<uint64_t> resumeOffset(
        int64_t partSize, uint64_t size, PartSha partSha, SourceSha sourceSha)
    {
        if (partSize <= 0 || uint64_t(partSize) > size)
            return uint64_t(0);
        common::Result<std::string> part = partSha(uint64_t(partSize));
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
        if (remoteSize(m_session, *sftp, path) == int64_t(size)) {
            common::Result<std::string> theirs = remoteSha256(m_session, path, size);
            common::Result<std::string> ours = localSha256(path);
            if (!theirs || !ours)
                return !theirs ? theirs.error() : ours.error();
            if (*theirs == *ours) {
                ++m_summary.skipped;
                advance(path, size, size, size);
                return common::Ok{};
            }
        }
        common::Result<uint64_t> offset = resumeOffset(
            remoteSize(m_session, *sftp, part), size,
            [&](uint64_t n) { return remoteSha256(m_session, part, n); },
            [&](uint64_t n) { return localSha256(path, n); });
        if (!offset)
            return offset.error();
        if (common::Status made = runChecked(m_session,
                "umask 077 && mkdir -p -- "
                    + launch::shellQuote(fs::path(path).parent_path().string()));
            !made)
            return made;
        if (common::Status sent = send(path, part, *offset, size); !sent)
            return sent;
        common::Result<std::string> theirs = remoteSha256(m_session, part, size);
        common::Result<std::string> ours = localSha256(path);
        if (!theirs || !ours)
            return !theirs ? theirs.error() : ours.error();
        if (*theirs != *ours)
            return Error{m_session.target().describe() + ": " + part + " does not match " + path
                    + " (SHA-256 " + *theirs + ", here " + *ours + ")",
                {}};
        if (common::Status kept = ownerOnlyMode(*sftp, path, part); !kept)
            return kept;
        ++m_summary.copied;
        m_summary.resumed += *offset > 0;
        return runChecked(
            m_session, "mv -f -- " + launch::shellQuote(part) + " " + launch::shellQuote(path));
    }

    // The copy there is its owner's alone, whatever its source's mode here:
    // a node is often a shared machine, and weights and datasets are the
    // user's (private by default); the owner's execute bit is kept.
    common::Status ownerOnlyMode(
        sftp_session sftp, const std::string& path, const std::string& part)
    {
        struct stat source { };
        if (::stat(path.c_str(), &source) != 0)
            return Error{"cannot read " + path + ": " + std::strerror(errno), {}};
        const SshSession::Bounded bounded(m_session);
        if (sftp_chmod(sftp, part.c_str(), source.st_mode & 0700) != 0)
            return Error{
                m_session.target().describe() + ": cannot set the mode of " + part + stalled(), {}};
        return common::Ok{};
    }

    // Sends `path` from `offset` on into `part` there, through `cat` on an
    // SSH channel rather than SFTP writes: libssh 0.10 has no asynchronous
    // SFTP write, and one 32 KiB write a round trip is 0.6 MB/s at 50 ms.
    // The part is new and private (umask 077), or the earlier copy's part of
    // `offset` bytes (resumeOffset) that this one appends to.
    common::Status send(
        const std::string& path, const std::string& part, uint64_t offset, uint64_t size)
    {
        std::ifstream in(path, std::ios::binary);
        in.seekg(std::streamoff(offset));
        if (!in)
            return Error{"cannot read " + path, {}};
        uint64_t done = offset;
        advance(path, done, size, done);
        const auto next = [&](char* buffer, size_t capacity) -> size_t {
            in.read(buffer, std::streamsize(std::min<uint64_t>(capacity, size - done)));
            const auto got = size_t(in.gcount());
            done += got;
            m_summary.bytesSent += got;
            if (got > 0)
                advance(path, done, size, got);
            return got;
        };
        const std::string command = "umask 077 && exec cat " + std::string(offset ? ">> " : "> ")
            + launch::shellQuote(part);
        common::Result<CommandResult> sent = m_session.runWithInput(command, next);
        // The session's error names the host, the command and its part.
        if (!sent)
            return Error{sent.error().message, "run it again: the copy goes on from there"};
        if (sent->exitStatus != 0)
            return Error{m_session.target().describe() + ": cannot write " + part + ": "
                    + common::trim(sent->errorOutput),
                {}};
        return common::Ok{};
    }

    // Why a call failed, when it was because the server stopped answering.
    std::string stalled() const
    {
        const std::string reason = m_session.failureReason({});
        return reason.empty() ? reason : " (" + reason + ")";
    }

    common::Status download(
        const std::string& remotePath, uint64_t size, const std::string& localPath)
    {
        std::error_code error;
        common::Result<std::string> theirs = remoteSha256(m_session, remotePath, size);
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
        common::Result<uint64_t> offset = resumeOffset(
            partSize, size, [&](uint64_t) { return localSha256(part); },
            [&](uint64_t n) { return remoteSha256(m_session, remotePath, n, true); });
        if (!offset)
            return offset.error();
        common::Result<std::vector<sftp_session_struct*>> channels =
            m_session.sftpChannels(size - *offset >= kStripeFrom ? kStreams : 1);
        if (!channels)
            return channels.error();
        SshSession::Bounded bounded(m_session);
        std::vector<SftpFile> files;
        for (sftp_session channel : *channels) {
            files.emplace_back(sftp_open(channel, remotePath.c_str(), O_RDONLY, 0));
            if (!files.back())
                return Error{
                    m_session.target().describe() + ": cannot read " + remotePath + stalled(), {}};
        }
        // O_NOFOLLOW: a symlink put where the part goes is refused, never
        // written through.
        LocalFile out(::open(part.c_str(),
            O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (*offset ? O_APPEND : O_TRUNC), 0644));
        if (!out)
            return Error{"cannot write " + part + ": " + std::strerror(errno), {}};
        advance(localPath, *offset, size, *offset);
        if (common::Status received =
                receive(files, out.get(), {remotePath, part, localPath}, *offset, size, bounded);
            !received)
            return received;
        files.clear();
        if (::close(out.release()) != 0)
            return Error{"cannot write " + part + ": " + std::strerror(errno), {}};
        common::Result<std::string> ours = localSha256(part);
        if (!ours)
            return ours.error();
        if (*ours != *theirs)
            return Error{part + " does not match " + remotePath + " (SHA-256 " + *ours + ", there "
                    + *theirs + ")",
                {}};
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
    struct Names {
        const std::string& remote;
        const std::string& part; // written here
        const std::string& local; // what progress names
    };

    // Reads the file from `done` to `size` into `out`, its reads dealt in
    // turn to `files` (one handle per SFTP channel) with up to kInFlight
    // outstanding on each: one read a round trip would bound a copy to
    // kChunk / RTT (0.6 MB/s at 50 ms). libssh 0.10 has this for reads only
    // (sftp_async_*); send() writes through a channel instead. Answers are
    // taken in offset order, so the part grows front to back.
    common::Status receive(const std::vector<SftpFile>& files, int out, const Names& names,
        uint64_t done, uint64_t size, SshSession::Bounded& bounded)
    {
        struct Read {
            sftp_file file;
            int id;
            uint32_t length;
        };
        std::deque<Read> pending; // in offset order
        uint64_t requested = done;
        size_t turn = 0;
        std::vector<char> buffer(kChunk);
        while (done < size) {
            for (; pending.size() < kInFlight * files.size() && requested < size;
                 requested += pending.back().length) {
                const auto length = uint32_t(std::min<uint64_t>(kChunk, size - requested));
                sftp_file file = files[turn++ % files.size()].get();
                const int id =
                    sftp_seek64(file, requested) == 0 ? sftp_async_read_begin(file, length) : -1;
                if (id < 0)
                    return readStopped(names.remote, done);
                pending.push_back({file, id, length});
            }
            const Read read = pending.front();
            pending.pop_front();
            const int got = sftp_async_read(read.file, buffer.data(), kChunk, uint32_t(read.id));
            if (got <= 0)
                return readStopped(names.remote, done);
            bounded.progressed();
            if (!common::writeAll(out, buffer.data(), size_t(got)))
                return Error{"cannot write " + names.part + ": " + std::strerror(errno), {}};
            done += uint64_t(got);
            advance(names.local, done, size, uint64_t(got));
            // A short answer leaves a gap before the reads already asked
            // for: drop them and ask again from where this one ended.
            if (uint32_t(got) < read.length && done < size) {
                for (; !pending.empty(); pending.pop_front()) {
                    const Read& dropped = pending.front();
                    if (sftp_async_read(dropped.file, buffer.data(), kChunk, uint32_t(dropped.id))
                        < 0)
                        return readStopped(names.remote, done);
                }
                requested = done;
            }
        }
        return common::Ok{};
    }

    common::Status readStopped(const std::string& remotePath, uint64_t done) const
    {
        return Error{m_session.target().describe() + ": reading " + remotePath + " stopped at byte "
                + std::to_string(done) + stalled(),
            "run it again: the copy goes on from there"};
    }

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

bool remoteFolderExists(SshSession& session, const std::string& path)
{
    common::Result<sftp_session_struct*> sftp = session.sftp();
    if (!sftp)
        return false;
    const SshSession::Bounded bounded(session);
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
    common::Result<sftp_session_struct*> sftp = session.sftp();
    if (!sftp)
        return sftp.error();
    RemoteListing listing;
    if (auto listed = listRemoteTree(session, *sftp, remoteDir, listing); !listed)
        return listed.error();
    std::vector<RemoteFile>& files = listing.files;
    if (files.empty())
        return Error{session.target().describe() + ": " + remoteDir + " holds no files", {}};
    std::sort(files.begin(), files.end(),
        [](const RemoteFile& a, const RemoteFile& b) { return a.relative < b.relative; });
    uint64_t total = 0;
    std::vector<std::string> targets;
    for (const RemoteFile& file : files) {
        common::Result<std::string> target = localPathUnder(localDir, file.relative);
        if (!target)
            return target.error();
        targets.push_back(std::move(target).value());
        total += file.size;
    }
    std::error_code made;
    fs::create_directories(localDir, made);
    if (made)
        return Error{"cannot make " + localDir + ": " + made.message(), {}};
    // As makeFoldersUnder does below it: in a folder others can write to, a
    // link put where this one goes would send the copies elsewhere.
    if (fs::is_symlink(localDir, made))
        return Error{localDir + " is a symbolic link: fetch writes only into real folders",
            "remove the link, or fetch --to another folder"};
    Transfer transfer(session, progress, total);
    for (size_t i = 0; i < files.size(); ++i) {
        if (common::Status folders = makeFoldersUnder(localDir, files[i].relative); !folders)
            return folders.error();
        if (common::Status copied =
                transfer.download(remoteDir + "/" + files[i].relative, files[i].size, targets[i]);
            !copied)
            return copied.error();
    }
    return transfer.summary();
}

} // namespace tb::remote
