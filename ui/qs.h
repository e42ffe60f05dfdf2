#pragma once

#include <QString>

#include <string>

namespace tb::ui {

// core/ speaks UTF-8 std::string; the pages show QStrings.
inline QString qs(const std::string& text)
{
    return QString::fromStdString(text);
}

} // namespace tb::ui
