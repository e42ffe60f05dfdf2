#include "../support/test_paths.h"
#include "startup_probe.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QWidget>
#include <QtTest>

#include <chrono>

// The startup probe bench_gui_cold_start reads (ui/startup_probe.h): off
// unless TUNEBENCH_STARTUP_PROBE is 1, and when on, the real GUI reports its
// first frame on the shared clock and quits by itself.
class TestStartupProbe : public QObject {
    Q_OBJECT

private slots:
    void armedOnlyWhenAsked_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<bool>("armed");
        QTest::addRow("unset") << QByteArray() << false;
        QTest::addRow("0") << QByteArray("0") << false;
        QTest::addRow("yes") << QByteArray("yes") << false;
        QTest::addRow("1") << QByteArray("1") << true;
    }
    void armedOnlyWhenAsked()
    {
        QFETCH(QByteArray, value);
        QFETCH(bool, armed);
        if (value.isNull())
            qunsetenv("TUNEBENCH_STARTUP_PROBE");
        else
            qputenv("TUNEBENCH_STARTUP_PROBE", value);
        QWidget window;
        QCOMPARE(tb::ui::armStartupProbe(&window), armed);
        QCOMPARE(window.findChildren<QObject*>().size(),
            armed ? 1 : 0); // the probe, owned by the window
        qunsetenv("TUNEBENCH_STARTUP_PROBE");
    }

    void guiReportsItsFirstFrameAndQuits()
    {
        QTemporaryDir config;
        QProcess gui;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("TUNEBENCH_STARTUP_PROBE"), QStringLiteral("1"));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), config.path());
        gui.setProcessEnvironment(env);
        auto nowNs = [] {
            return std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::steady_clock::now().time_since_epoch())
                .count();
        };
        const qint64 before = nowNs();
        gui.start(QString::fromUtf8(tb::test::guiProgram()), {});
        QVERIFY2(gui.waitForFinished(60000), "the GUI did not quit after its first frame");
        const qint64 after = nowNs();
        QCOMPARE(gui.exitStatus(), QProcess::NormalExit);
        QCOMPARE(gui.exitCode(), 0);
        const QList<QByteArray> words = gui.readAllStandardOutput().simplified().split(' ');
        QCOMPARE(words.size(), 2);
        QCOMPARE(words[0], QByteArray("first-frame-ns"));
        bool ok = false;
        const qint64 frame = words[1].toLongLong(&ok);
        QVERIFY(ok);
        QVERIFY(frame > before && frame < after);
    }
};

QTEST_MAIN(TestStartupProbe)
#include "test_startup_probe.moc"
