#pragma once

#include <QWidget>

namespace tb::ui {

// The page of a feature that is not built yet. It says so plainly, names the
// issue that builds it, and shows no invented data.
class NotBuiltPage : public QWidget {
    Q_OBJECT

public:
    NotBuiltPage(const QString& title, const QString& purpose, const QString& arrivesWith,
        QWidget* parent = nullptr);
};

} // namespace tb::ui
