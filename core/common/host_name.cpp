#include "common/host_name.h"

#include <unistd.h>

namespace tb::common {

std::string hostName()
{
    char name[256] = {};
    return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

} // namespace tb::common
