#include "app_settings.h"

#include <QApplication>
#include <QSettings>
#include <QStandardPaths>
#include <QTest>

using namespace tb::ui;

class TestAppSettings : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        QApplication::setApplicationName(QStringLiteral("test_app_settings"));
        QSettings().clear();
    }

    void defaultsWhenUnset()
    {
        AppSettings settings;
        QCOMPARE(settings.value(settings::currentPage), QStringLiteral("planner"));
        QCOMPARE(settings.value(settings::windowStateVersion), 0);
    }

    void roundTrip()
    {
        AppSettings settings;
        settings.setValue(settings::currentPage, QStringLiteral("hosts"));
        settings.setValue(settings::windowStateVersion, settings::kWindowStateVersion);
        settings.setValue(settings::windowGeometry, QByteArray("\x01\x02geometry", 10));
        settings.sync();
        AppSettings reread;
        QCOMPARE(reread.value(settings::currentPage), QStringLiteral("hosts"));
        QCOMPARE(reread.value(settings::windowStateVersion), settings::kWindowStateVersion);
        QCOMPARE(reread.value(settings::windowGeometry), QByteArray("\x01\x02geometry", 10));
    }

    void wrongTypeFallsBackToDefault()
    {
        QSettings().setValue(
            QLatin1String(settings::windowStateVersion.key), QStringLiteral("not a number"));
        QCOMPARE(AppSettings().value(settings::windowStateVersion), 0);
    }
};

QTEST_MAIN(TestAppSettings)
#include "test_app_settings.moc"
