// The Hosts page: this machine and an SSH host (a real sshd on loopback)
// probed off the UI thread; a host that refuses marks only its own row; the
// list survives a restart. The model is under QAbstractItemModelTester
// throughout: rows added, probed, answered, failed and removed.
#include "../support/qt_test_paths.h"
#include "sshd_server.h"

#include "hosts/hosts_model.h"
#include "hosts/hosts_page.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDir>
#include <QSettings>
#include <QStandardPaths>
#include <QtTest>

using tb::ui::HostsModel;
using tb::ui::HostsPage;

namespace {

QString cell(const HostsModel& model, int row, int column)
{
    return model.data(model.index(row, column), Qt::DisplayRole).toString();
}

tb::remote::SshTarget target(const char* host)
{
    tb::remote::SshTarget result;
    result.user = "user";
    result.host = host;
    return result;
}

} // namespace

class TestHostsPage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QApplication::setOrganizationName(QStringLiteral("TunebenchTest"));
        QApplication::setApplicationName(QStringLiteral("test_hosts_page"));
        QSettings().clear();
        const QString failure = m_server.start();
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        QVERIFY(m_work.isValid());
        QDir().mkpath(tb::test::qBuildPath("screenshots"));
    }

    void probesThisMachineAndAnSshHost()
    {
        HostsPage page;
        page.resize(1400, 500);
        page.show();
        HostsModel& model = *page.model();
        QAbstractItemModelTester tester(
            &model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(cell(model, 0, HostsModel::Host).startsWith(QStringLiteral("this machine")), true);
        QString error;
        QVERIFY2(page.addHost(m_server.user() + "@127.0.0.1", m_server.port(), m_server.userKey(),
                     m_server.knownHosts(), &error),
            qPrintable(error));
        QVERIFY(!page.addHost(m_server.user() + "@127.0.0.1", m_server.port(), {}, {}, &error));
        QVERIFY2(error.contains(QStringLiteral("already listed")), qPrintable(error));
        QVERIFY(!page.addHost(QStringLiteral("user@"), 22, {}, {}, &error));
        QVERIFY2(error.contains(QStringLiteral("expected [USER@]HOST")), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(!page.isProbing(), 30000);
        QCOMPARE(model.rowCount(), 2);
        for (int row : {0, 1}) {
            QCOMPARE(cell(model, row, HostsModel::Status), QStringLiteral("ok"));
            QVERIFY(cell(model, row, HostsModel::Cpus).toInt() >= 1);
            QVERIFY2(cell(model, row, HostsModel::Memory).contains(QStringLiteral(" free of ")),
                qPrintable(cell(model, row, HostsModel::Memory)));
        }
        // The same machine, reached both ways.
        QCOMPARE(cell(model, 1, HostsModel::Cpus), cell(model, 0, HostsModel::Cpus));
        if (QStandardPaths::findExecutable(QStringLiteral("nvidia-smi")).isEmpty())
            QCOMPARE(
                cell(model, 1, HostsModel::Gpus), QStringLiteral("none (nvidia-smi not found)"));
        QVERIFY(page.grab().save(tb::test::qBuildPath("screenshots/hosts_page.png")));
    }

    void refusingHostMarksOnlyItsRow()
    {
        HostsPage page; // restores the host added above
        HostsModel& model = *page.model();
        QAbstractItemModelTester tester(
            &model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 2);
        QString error;
        // The same host at a port nothing serves.
        QVERIFY(page.addHost(m_server.user() + "@127.0.0.1",
            tb::launch::pickFreePort("127.0.0.1").value(), m_server.userKey(),
            m_server.knownHosts(), &error));
        QTRY_VERIFY_WITH_TIMEOUT(!page.isProbing(), 30000);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(cell(model, 1, HostsModel::Status), QStringLiteral("ok"));
        QVERIFY2(cell(model, 2, HostsModel::Status).contains(QStringLiteral("cannot connect")),
            qPrintable(cell(model, 2, HostsModel::Status)));
        QVERIFY(cell(model, 2, HostsModel::Cpus).isEmpty());
    }

    // Every change the page makes, made directly, under the tester: the
    // rows, the cells a probe fills in, and this machine's row staying put.
    void modelChangesUnderTheTester()
    {
        HostsModel model;
        QAbstractItemModelTester tester(
            &model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.columnCount(), int(HostsModel::ColumnCount));
        QVERIFY(model.addHost(target("a.example")));
        QVERIFY(model.addHost(target("b.example")));
        QVERIFY(!model.addHost(target("a.example")));
        QCOMPARE(model.rowCount(), 3);
        model.setProbing(1);
        QVERIFY2(cell(model, 1, HostsModel::Status).contains(QStringLiteral("probing")),
            qPrintable(cell(model, 1, HostsModel::Status)));
        tb::remote::HostFacts facts;
        facts.hostName = "a";
        facts.cpuCount = 8;
        facts.memoryTotalBytes = std::int64_t(16) << 30;
        facts.memoryAvailableBytes = std::int64_t(4) << 30;
        facts.gpuNote = "nvidia-smi not found";
        model.setResult(1, facts);
        QCOMPARE(cell(model, 1, HostsModel::Cpus), QStringLiteral("8"));
        QCOMPARE(cell(model, 1, HostsModel::Status), QStringLiteral("ok"));
        model.setResult(2, tb::common::Error{"b.example: connection refused", {}});
        QVERIFY2(cell(model, 2, HostsModel::Status).contains(QStringLiteral("connection refused")),
            qPrintable(cell(model, 2, HostsModel::Status)));
        model.removeRow(0); // this machine stays
        QCOMPARE(model.rowCount(), 3);
        model.removeRow(1);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(cell(model, 1, HostsModel::Host), QStringLiteral("user@b.example"));
        model.removeRow(5);
        QCOMPARE(model.rowCount(), 2);
    }

private:
    tb::test::SshdServer m_server;
    QTemporaryDir m_work;
};

QTEST_MAIN(TestHostsPage)
#include "test_hosts_page.moc"
