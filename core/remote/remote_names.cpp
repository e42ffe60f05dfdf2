#include "remote/remote_names.h"

#include "common/text.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/stat.h>

namespace tb::remote {

using common::Error;

common::Status checkEntryName(const std::string& name, const std::string& where)
{
    const char* problem = nullptr;
    if (name.empty())
        problem = "is empty";
    else if (name == "." || name == "..")
        problem = "names a folder above or itself";
    else if (name.find('/') != std::string::npos)
        problem = "holds a '/'";
    else if (std::any_of(name.begin(), name.end(), common::isControlCharacter))
        problem = "holds a control character";
    if (!problem)
        return common::Ok{};
    return Error::at(common::escapeControl(where), "entry '" + common::escapeControl(name) + "'",
        std::string(problem),
        "a file name in the folder is one path component of printable characters; nothing was "
        "written for it here");
}

common::Result<std::string> localPathUnder(const std::string& localDir, const std::string& relative)
{
    if (relative.empty() || relative.front() == '/')
        return Error::at(common::escapeControl(localDir),
            "path '" + common::escapeControl(relative) + "'", "is empty or absolute",
            "a path relative to the folder");
    std::string joined = localDir;
    for (size_t begin = 0; begin <= relative.size();) {
        const size_t end = std::min(relative.find('/', begin), relative.size());
        const std::string component = relative.substr(begin, end - begin);
        if (auto status = checkEntryName(component, localDir + "/" + relative); !status)
            return status.error();
        joined += "/" + component;
        begin = end + 1;
    }
    return joined;
}

common::Status makeFoldersUnder(const std::string& localDir, const std::string& relative)
{
    std::string path = localDir;
    for (size_t slash = relative.find('/'), begin = 0; slash != std::string::npos;
         begin = slash + 1, slash = relative.find('/', begin)) {
        path += "/" + relative.substr(begin, slash - begin);
        struct stat info { };
        if (::lstat(path.c_str(), &info) != 0) {
            if (errno == ENOENT && (::mkdir(path.c_str(), 0777) == 0 || errno == EEXIST))
                continue;
            return Error{
                "cannot make " + common::escapeControl(path) + ": " + std::strerror(errno), {}};
        }
        if (S_ISLNK(info.st_mode))
            return Error::at(common::escapeControl(path), "", "is a symbolic link here",
                "a folder: nothing is written through a link under the folder fetched to");
        if (!S_ISDIR(info.st_mode))
            return Error{common::escapeControl(path) + " is not a folder", {}};
    }
    return common::Ok{};
}

common::Result<std::string> defaultFetchFolder(const std::string& runDir)
{
    const size_t last = runDir.find_last_not_of('/');
    const std::string trimmed =
        last == std::string::npos ? std::string() : runDir.substr(0, last + 1);
    const size_t slash = trimmed.rfind('/');
    const std::string name = slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
    if (name.empty() || name == "." || name == ".."
        || std::any_of(name.begin(), name.end(), common::isControlCharacter))
        return Error::at(
            runDir.empty() ? std::string("the run folder") : common::escapeControl(runDir), "",
            "its last component '" + common::escapeControl(name) + "' cannot name a folder here",
            "give the folder to write to (--to DIR)");
    return name;
}

} // namespace tb::remote
