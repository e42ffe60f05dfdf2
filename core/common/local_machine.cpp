#include "common/local_machine.h"

#include "common/text.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace tb::common {

std::string hostName()
{
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

std::string processCommandLine(long long pid)
{
    std::ifstream file("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    std::replace(text.begin(), text.end(), '\0', ' ');
    return trim(text);
}

} // namespace tb::common
