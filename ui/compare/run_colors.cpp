#include "compare/run_colors.h"

namespace tb::ui {

QColor runColor(int index)
{
    // Matplotlib's "tab10" palette.
    static const QColor kPalette[] = {QColor(31, 119, 180), QColor(255, 127, 14),
        QColor(44, 160, 44), QColor(214, 39, 40), QColor(148, 103, 189), QColor(140, 86, 75),
        QColor(227, 119, 194), QColor(127, 127, 127), QColor(188, 189, 34), QColor(23, 190, 207)};
    constexpr int kCount = int(sizeof kPalette / sizeof kPalette[0]);
    const QColor color = kPalette[index % kCount];
    return (index / kCount) % 2 == 0 ? color : color.darker(150);
}

} // namespace tb::ui
