#include "../support/qt_test_paths.h"
#include "about_dialog.h"
#include "main_window.h"
#include "planner/planner_page.h"

#include <QApplication>
#include <QDir>
#include <QLabel>
#include <QListWidget>
#include <QSettings>
#include <QStandardPaths>
#include <QTest>

using tb::ui::MainWindow;

// Opens the real main window (under Xvfb in CI), visits every page and saves
// a screenshot of each into <build>/screenshots/ for a person to look at.
class TestMainWindow : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        QApplication::setApplicationName(QStringLiteral("test_main_window"));
        QSettings().clear();
        m_screenshotDir = tb::test::qBuildPath("screenshots");
        QDir().mkpath(m_screenshotDir);
    }

    void visitsEveryPage()
    {
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QCOMPARE(window.pageIds(), (QStringList{"planner", "runs", "compare", "monitor", "hosts"}));
        for (const QString& id : window.pageIds()) {
            window.showPage(id);
            QCOMPARE(window.currentPageId(), id);
            QWidget* page = window.page(id);
            QVERIFY(page);
            QVERIFY(page->isVisible());
            // The planner's screenshot shows the recommendations, not the
            // moment before the sweep answers.
            if (auto* planner = qobject_cast<tb::ui::PlannerPage*>(page))
                QVERIFY(QTest::qWaitFor(
                    [planner] { return !planner->recommendationsPending(); }, 20000));
            QTest::qWait(50);
            const QString path = m_screenshotDir + QStringLiteral("/main_window_%1.png").arg(id);
            QVERIFY2(window.grab().save(path), qPrintable(path));
        }
    }

    void notBuiltPagesSaySo()
    {
        MainWindow window;
#ifdef TB_HAVE_SSH
        const QStringList notBuilt;
#else
        const QStringList notBuilt{QStringLiteral("monitor"), QStringLiteral("hosts")};
#endif
        // Exactly the pages this build lacks say so; every other page is real.
        for (const QString& id : window.pageIds()) {
            auto* status = window.page(id)->findChild<QLabel*>(QStringLiteral("notBuiltStatus"));
            QCOMPARE(status != nullptr, notBuilt.contains(id));
            if (status)
                QVERIFY(status->text().contains(QStringLiteral("Not built yet")));
        }
    }

    void remembersPageAcrossRestarts()
    {
        {
            MainWindow window;
            window.show();
            window.showPage(QStringLiteral("monitor"));
            window.close();
        }
        MainWindow reopened;
        QCOMPARE(reopened.currentPageId(), QStringLiteral("monitor"));
        reopened.showPage(QStringLiteral("planner"));
        reopened.close();
    }

    void aboutListsEveryLibrary()
    {
        QStringList names;
        for (const auto& row : tb::ui::AboutDialog::componentVersions()) {
            names << row.first;
            QVERIFY2(!row.second.isEmpty(), qPrintable(row.first));
        }
        for (const char* library : {"Qt", "LibTorch", "libssh", "yaml-cpp", "QCustomPlot"})
            QVERIFY2(names.contains(QLatin1String(library)), library);
        tb::ui::AboutDialog dialog;
        dialog.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dialog));
        QVERIFY(dialog.grab().save(m_screenshotDir + QStringLiteral("/about.png")));
    }

private:
    QString m_screenshotDir;
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
