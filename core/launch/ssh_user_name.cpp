#include "launch/ssh_user_name.h"

#include <algorithm>

namespace tb::launch {

std::string whyNotAUserName(const std::string& user)
{
    const auto allowed = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
            || c == '.' || c == '_' || c == '-';
    };
    if (!std::all_of(user.begin(), user.end(), allowed))
        return "expected letters, digits, '.', '_' and '-' only";
    if (!user.empty() && user.front() == '-')
        return "a user name does not start with '-'";
    return {};
}

} // namespace tb::launch
