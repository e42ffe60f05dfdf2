// A path's permission bits (07777), or -1 when it cannot be stat'ed: what
// the suites check private folders and files by.
#pragma once

#include <string>

#include <sys/stat.h>

namespace tb::test {

inline int modeOf(const std::string& path)
{
    struct stat info { };
    return ::stat(path.c_str(), &info) == 0 ? int(info.st_mode & 07777) : -1;
}

} // namespace tb::test
