#include "common/error.h"

namespace tb::common {

std::string Error::toString() const
{
    if (hint.empty())
        return message;
    return message + " (" + hint + ")";
}

Error Error::at(
    const std::string& file, const std::string& where, const std::string& what, std::string hint)
{
    std::string text;
    for (const std::string* part : {&file, &where}) {
        if (!part->empty())
            text += *part + ": ";
    }
    text += what;
    return Error{std::move(text), std::move(hint)};
}

} // namespace tb::common
