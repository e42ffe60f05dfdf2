#include "remote/shared_run_folder.h"

#include "common/text.h"
#include "remote/ssh_session.h"

#include <libssh/sftp.h>

#include <fcntl.h>

#include <filesystem>
#include <memory>

namespace tb::remote {

namespace {

using common::Error;

struct AttributesFree {
    void operator()(sftp_attributes a) const { sftp_attributes_free(a); }
};
using Attributes = std::unique_ptr<sftp_attributes_struct, AttributesFree>;

std::string where(SshSession& session, const std::string& path)
{
    return session.target().describe() + ":" + common::escapeControl(path);
}

std::string sftpReason(SshSession& session, sftp_session sftp)
{
    return session.failureReason("SFTP error " + std::to_string(sftp_get_error(sftp)));
}

// The folder `runDir` is or will be made in: itself when it is a folder
// there, else its nearest parent that is.
common::Result<std::string> nearestFolder(
    SshSession& session, sftp_session sftp, const std::string& runDir)
{
    std::filesystem::path folder = std::filesystem::path(runDir).lexically_normal();
    for (;;) {
        const std::string text = folder.empty() ? std::string(".") : folder.string();
        const SshSession::Bounded bounded(session);
        const Attributes attributes(sftp_stat(sftp, text.c_str()));
        if (attributes && attributes->type == SSH_FILEXFER_TYPE_DIRECTORY)
            return text;
        if (attributes)
            return Error{where(session, text) + ": is not a folder, so the run folder " + runDir
                    + " cannot be made there",
                {}};
        if (sftp_get_error(sftp) != SSH_FX_NO_SUCH_FILE)
            return Error{
                where(session, text) + ": cannot be looked at: " + sftpReason(session, sftp), {}};
        if (folder.empty() || folder == folder.root_path())
            return Error{where(session, runDir) + ": no folder of it exists there", {}};
        folder = folder.parent_path();
    }
}

} // namespace

common::Result<std::string> writeSharedMarker(
    SshSession& session, const std::string& runDir, const std::string& nonce)
{
    common::Result<sftp_session_struct*> sftp = session.sftp();
    if (!sftp)
        return sftp.error();
    common::Result<std::string> folder = nearestFolder(session, *sftp, runDir);
    if (!folder)
        return folder.error();
    const std::string marker =
        (std::filesystem::path(*folder) / (".tunebench-shared-" + nonce)).string();
    const SshSession::Bounded bounded(session);
    sftp_file file = sftp_open(*sftp, marker.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (!file)
        return Error{where(session, marker)
                + ": cannot write the shared-folder marker: " + sftpReason(session, *sftp),
            "the run folder must be writable there: the run writes its checkpoints into it"};
    const bool written = sftp_write(file, nonce.data(), nonce.size()) == ssize_t(nonce.size());
    const bool closed = sftp_close(file) == SSH_OK;
    if (!written || !closed)
        return Error{where(session, marker)
                + ": cannot write the shared-folder marker: " + sftpReason(session, *sftp),
            {}};
    return marker;
}

common::Result<bool> remotePathExists(SshSession& session, const std::string& path)
{
    common::Result<sftp_session_struct*> sftp = session.sftp();
    if (!sftp)
        return sftp.error();
    const SshSession::Bounded bounded(session);
    const Attributes attributes(sftp_stat(*sftp, path.c_str()));
    if (attributes)
        return true;
    if (sftp_get_error(*sftp) == SSH_FX_NO_SUCH_FILE)
        return false;
    return Error{where(session, path) + ": cannot be looked at: " + sftpReason(session, *sftp), {}};
}

common::Status removeRemoteFile(SshSession& session, const std::string& path)
{
    common::Result<sftp_session_struct*> sftp = session.sftp();
    if (!sftp)
        return sftp.error();
    const SshSession::Bounded bounded(session);
    if (sftp_unlink(*sftp, path.c_str()) != SSH_OK)
        return Error{
            where(session, path) + ": cannot remove it: " + sftpReason(session, *sftp), {}};
    return common::Ok{};
}

} // namespace tb::remote
