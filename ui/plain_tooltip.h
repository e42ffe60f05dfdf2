#pragma once

#include <QString>

namespace tb::ui {

// Text from a run or from another machine as a tooltip. Qt renders a tooltip
// as HTML whenever it looks like HTML, so a host could style or hide text in
// it: escaped and wrapped, it shows as written, line breaks included.
inline QString plainToolTip(const QString& text)
{
    if (text.isEmpty())
        return {};
    return QStringLiteral("<p style='white-space:pre-wrap'>%1</p>").arg(text.toHtmlEscaped());
}

} // namespace tb::ui
