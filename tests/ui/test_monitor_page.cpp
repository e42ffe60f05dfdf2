// The Monitor page against a real sshd on loopback: it follows a run
// folder over SSH as the file grows, says why a connection is refused, and
// stops a real run there.
#include "../support/endless_run.h"
#include "../support/event_lines.h"
#include "../support/qt_test_paths.h"
#include "sshd_server.h"

#include "metrics/event.h"
#include "metrics/step_record.h"
#include "monitor/monitor_page.h"
#include "runs/run_charts.h"
#include "runs/run_view.h"

#include <QLabel>
#include <QSignalSpy>
#include <QtTest>

using tb::metrics::EventType;
using tb::metrics::makeEvent;
using tb::test::appendLine;
using tb::test::stepLine;
using tb::ui::MonitorPage;

class TestMonitorPage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        const QString failure = m_server.start();
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        QVERIFY(m_work.isValid());
        QDir().mkpath(tb::test::qBuildPath("screenshots"));
    }

    void followsARunOverSsh()
    {
        const QString run = m_work.filePath(QStringLiteral("followed"));
        QVERIFY(QDir().mkpath(run));
        appendLine(run + "/events.jsonl",
            makeEvent(EventType::RunStart, 0, 1.0e9,
                {{"run_id", "far"}, {"world_size", 8}, {"config", nlohmann::json::object()},
                    {"model", {{"name", "<b>Llama-3.1-8B</b><img src=\"x\">"}}}, {"total_steps", 6},
                    {"sharding", "fsdp-full"}})
                .dump());
        appendLine(run + "/events.jsonl", stepLine(1, 1800.0));

        MonitorPage page;
        page.resize(1400, 900);
        page.show();
        connectPage(page, run, m_server.knownHosts());
        QTRY_VERIFY(page.isConnected());
        QVERIFY2(page.statusText().startsWith(QStringLiteral("Following 127.0.0.1:") + run),
            qPrintable(page.statusText()));
        QTRY_COMPARE(page.view()->charts()->lossPointCount(), 1);
        appendLine(run + "/events.jsonl", stepLine(2, 1800.0));
        appendLine(run + "/events.jsonl", stepLine(3, 1800.0));
        QTRY_COMPARE_WITH_TIMEOUT(page.view()->charts()->lossPointCount(), 3, 10000);
        QVERIFY2(page.view()->summaryText().contains(QStringLiteral("8 ranks, fsdp-full")),
            qPrintable(page.view()->summaryText()));
        // What the host wrote is shown as written, never as markup (review L6).
        for (const char* name : {"runSummary", "monitorStatus"}) {
            const auto* label = page.findChild<QLabel*>(QString::fromLatin1(name));
            QVERIFY2(label, name);
            QCOMPARE(label->textFormat(), Qt::PlainText);
        }
        QVERIFY2(page.view()->summaryText().contains(QStringLiteral("<b>Llama-3.1-8B</b><img")),
            qPrintable(page.view()->summaryText()));
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/monitor_page_markup.png")));
        QVERIFY(page.canStop()); // decided there, over SSH: this run names no pid
        QSignalSpy stopped(&page, &MonitorPage::stopFinished);
        page.stopRun();
        QTRY_COMPARE(stopped.count(), 1);
        QVERIFY2(stopped.first().first().toString().contains(QStringLiteral("names no pid")),
            qPrintable(stopped.first().first().toString()));

        page.disconnectFromHost();
        QVERIFY(!page.isConnected());
        appendLine(run + "/events.jsonl", stepLine(4, 1800.0));
        QTest::qWait(1500);
        QCOMPARE(page.view()->charts()->lossPointCount(), 3); // nothing read once disconnected
    }

    void refusedConnectionSaysWhy()
    {
        MonitorPage page;
        const QString emptyKnownHosts = m_work.filePath(QStringLiteral("empty_known_hosts"));
        connectPage(page, m_work.path(), emptyKnownHosts);
        QTRY_VERIFY(page.statusText().contains(QStringLiteral("is not in")));
        QVERIFY2(
            page.statusText().contains(QStringLiteral("SHA256:")), qPrintable(page.statusText()));
        QVERIFY(!page.isConnected());
        QVERIFY(!page.canStop());
    }

    void stopsARealRunOverSsh()
    {
        if (const QString why = tb::test::whyNoEndlessRun(); !why.isEmpty())
            TB_SKIP(why);
        const QString runDir = m_work.filePath(QStringLiteral("real"));
        const QString config = m_work.filePath(QStringLiteral("real.yaml"));
        QVERIFY(tb::test::writeEndlessRunConfig(config, runDir));
        QProcess trainer;
        QVERIFY(tb::test::startTrainer(trainer, config));
        const qint64 pid = trainer.processId();

        MonitorPage page;
        page.resize(1400, 900);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        connectPage(page, runDir, m_server.knownHosts());
        QTRY_VERIFY_WITH_TIMEOUT(page.view()->charts()->lossPointCount() >= 8, 120000);
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/monitor_page.png")));
        QSignalSpy stopped(&page, &MonitorPage::stopFinished);
        QVERIFY(page.canStop());
        page.stopRun();
        QTRY_COMPARE_WITH_TIMEOUT(stopped.count(), 1, 20000);
        QCOMPARE(stopped.first().first().toString(), QString());
        QVERIFY(trainer.waitForFinished(60000));
        QTRY_VERIFY_WITH_TIMEOUT(page.history().end().has_value(), 10000);
        QCOMPARE(page.history().end()->status, std::string("stopped"));
        QVERIFY(page.view()->messageTexts().contains(
            QStringLiteral("[stop] SIGTERM sent to process %1").arg(pid)));
        QVERIFY(!page.canStop());
    }

private:
    void connectPage(MonitorPage& page, const QString& runDir, const QString& knownHosts)
    {
        page.connectTo(m_server.user() + QStringLiteral("@127.0.0.1"), m_server.port(),
            m_server.userKey(), knownHosts, runDir);
    }

    tb::test::SshdServer m_server;
    QTemporaryDir m_work;
};

QTEST_MAIN(TestMonitorPage)
#include "test_monitor_page.moc"
