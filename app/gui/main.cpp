#include "main_window.h"

#include <QApplication>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Tunebench"));
    QApplication::setApplicationName(QStringLiteral("Tunebench"));
    QApplication::setApplicationVersion(QStringLiteral(TB_VERSION));

    tb::ui::MainWindow window;
    window.show();
    return QApplication::exec();
}
