#include "remote/sftp_listing.h"

#include "remote/remote_names.h"
#include "remote/sftp_transfer.h"

#include <libssh/sftp.h>

#include <memory>

namespace tb::remote {

namespace {

using common::Error;

struct SftpDirCloser {
    void operator()(sftp_dir dir) const { sftp_closedir(dir); }
};
struct SftpAttributesFree {
    void operator()(sftp_attributes attributes) const { sftp_attributes_free(attributes); }
};

constexpr int kMaxListingDepth = 32;
// Entries (files, folders, links) a fetched folder may hold: a run's
// adapter or merged export holds tens, a host that answers readdir for ever
// would otherwise fill this machine's memory.
constexpr std::size_t kMaxListedEntries = 20000;

// Every regular file under root/relative, over SFTP's readdir (no shell, one
// name per entry): each name is checked as one path component, symbolic
// links are not followed, partial copies (.tbpart) are left out.
common::Status listTree(SshSession& session, sftp_session sftp, const std::string& root,
    const std::string& relative, int depth, RemoteListing& into)
{
    const std::string path = relative.empty() ? root : root + "/" + relative;
    if (depth > kMaxListingDepth)
        return Error::at(session.target().describe() + ":" + path, "",
            "is more than " + std::to_string(kMaxListingDepth) + " folders below " + root,
            "is there a loop of folders there?");
    SshSession::Bounded bounded(session);
    const auto why = [&] {
        return session.failureReason("SFTP error " + std::to_string(sftp_get_error(sftp)));
    };
    std::unique_ptr<sftp_dir_struct, SftpDirCloser> dir(sftp_opendir(sftp, path.c_str()));
    if (!dir)
        return Error{
            session.target().describe() + ": cannot list " + path + " (" + why() + ")", {}};
    for (;;) {
        std::unique_ptr<sftp_attributes_struct, SftpAttributesFree> entry(
            sftp_readdir(sftp, dir.get()));
        if (!entry) {
            if (sftp_dir_eof(dir.get()))
                return common::Ok{};
            return Error{
                session.target().describe() + ": listing " + path + " stopped (" + why() + ")", {}};
        }
        bounded.progressed();
        const std::string name = entry->name ? entry->name : "";
        if (name == "." || name == "..")
            continue;
        if (++into.entries > kMaxListedEntries)
            return Error::at(session.target().describe() + ":" + root, "",
                "holds more than " + std::to_string(kMaxListedEntries) + " entries",
                "fetch copies a run's exports, which hold far fewer: is this the right folder?");
        if (auto valid = checkEntryName(name, session.target().describe() + ":" + path); !valid)
            return valid.error();
        const std::string child = relative.empty() ? name : relative + "/" + name;
        if (entry->type == SSH_FILEXFER_TYPE_DIRECTORY) {
            if (auto listed = listTree(session, sftp, root, child, depth + 1, into); !listed)
                return listed;
        } else if (entry->type == SSH_FILEXFER_TYPE_REGULAR && !name.ends_with(kPartSuffix)) {
            into.files.push_back({child, entry->size});
        }
    }
}

} // namespace

common::Status listRemoteTree(
    SshSession& session, sftp_session_struct* sftp, const std::string& root, RemoteListing& into)
{
    return listTree(session, sftp, root, "", 0, into);
}

} // namespace tb::remote
