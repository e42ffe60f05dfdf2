#include "this_executable.h"

#include <limits.h>
#include <unistd.h>

namespace tb::cli {

std::string thisExecutable()
{
    char path[PATH_MAX];
    const ssize_t length = ::readlink("/proc/self/exe", path, sizeof path - 1);
    return length > 0 ? std::string(path, size_t(length)) : std::string();
}

} // namespace tb::cli
