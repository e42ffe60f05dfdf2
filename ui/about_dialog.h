#pragma once

#include <QDialog>

namespace tb::ui {

// Versions of Tunebench and of every library it was built with, so a bug
// report carries them.
class AboutDialog : public QDialog {
    Q_OBJECT

public:
    explicit AboutDialog(QWidget* parent = nullptr);

    // name -> version rows, as shown; a test checks every library is there.
    static QList<QPair<QString, QString>> componentVersions();
};

} // namespace tb::ui
