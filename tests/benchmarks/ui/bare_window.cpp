// bench_gui_cold_start's reference: an empty QWidget of the main window's
// size, started and probed as the GUI is (ui/startup_probe.h).
#include "startup_probe.h"

#include <QApplication>
#include <QWidget>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QWidget window;
    window.resize(1280, 800); // MainWindow's size when nothing was saved
    tb::ui::armStartupProbe(&window);
    window.show();
    return QApplication::exec();
}
