#pragma once

#include <QColor>

namespace tb::ui {

// The colour of the n-th compared run, the same in every chart of the
// Compare page: ten distinct hues, then the same hues darker.
QColor runColor(int index);

} // namespace tb::ui
