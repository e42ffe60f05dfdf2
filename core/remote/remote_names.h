#pragma once

#include "common/error.h"

#include <string>

// What a remote host names (an entry of a folder listing, a run folder from
// its registry) becomes a path here only through these checks: a hostile or
// broken host must not make `fetch` write outside the folder it writes to
// (the scp client's CVE-2019-6111 and CVE-2018-20685). docs/MONITOR.md,
// "Fetching outputs". No libssh, no Qt.
namespace tb::remote {

// One name of a folder listing: a single path component. Refuses an empty
// name, "." and "..", a '/' and control characters (a newline included), with
// `where` (the remote folder) in the message.
common::Status checkEntryName(const std::string& name, const std::string& where);

// `localDir` joined with a path relative to it, each of its components
// passing checkEntryName: never absolute, never leaving `localDir`.
common::Result<std::string> localPathUnder(
    const std::string& localDir, const std::string& relative);

// Makes the folders of `relative` (a path localPathUnder accepted) under
// `localDir`, refusing one that is a symbolic link: a link planted there
// (in a shared folder) would take the files outside it. `localDir` itself
// is the user's to choose.
common::Status makeFoldersUnder(const std::string& localDir, const std::string& relative);

// The local folder a remote run folder is fetched to by default: its last
// component, trailing slashes ignored. Refuses a run folder whose last
// component is empty, "." or "..", or holds a control character.
common::Result<std::string> defaultFetchFolder(const std::string& runDir);

} // namespace tb::remote
