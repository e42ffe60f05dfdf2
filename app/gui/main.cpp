#include "main_window.h"
#include "startup_probe.h"

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("Tunebench"));
    QApplication::setApplicationName(QStringLiteral("Tunebench"));
    QApplication::setApplicationVersion(QStringLiteral(TB_VERSION));

    // --version and --help answer and exit before any window exists (the
    // package test asks an installed GUI for its version).
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Plan, run and monitor LLM fine-tunes (tunebench-cli is the headless CLI)."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.process(app);

    tb::ui::MainWindow window;
    tb::ui::armStartupProbe(&window); // bench_gui_cold_start's clock
    window.show();
    return QApplication::exec();
}
