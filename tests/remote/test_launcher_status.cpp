// The status lines of `launch --hostfile --status-json`: every kind written
// and read back equal, and a line that is not one refused naming what is
// wrong with it. A real launch's lines are read in test_multi_node and by the
// Runs page in test_multi_node_pages.
#include "remote/launcher_status.h"

#include <QtTest>

using tb::remote::LauncherStatus;
using tb::remote::NodeState;

Q_DECLARE_METATYPE(LauncherStatus)

class TestLauncherStatus : public QObject {
    Q_OBJECT

private slots:
    void readsBackWhatItWrites_data()
    {
        QTest::addColumn<LauncherStatus>("status");
        LauncherStatus running;
        running.type = LauncherStatus::Type::Node;
        running.node = {0, "root@10.0.0.10:22", NodeState::Running, "launcher pid 7"};
        running.node.runFolder = "/runs/a b, log /c\n\"d\"";
        running.node.log = "/s/x.node0.log";
        QTest::newRow("running") << running;
        LauncherStatus exited = running;
        exited.node = {1, "h1", NodeState::Exited, "exit status 143"};
        exited.node.exitCode = 143;
        QTest::newRow("exited") << exited;
        LauncherStatus failed = running;
        failed.node = {2, "h2", NodeState::CheckFailed, "one"};
        failed.node.problems = {"node 2 (h2): one", "node 2 (h2): two"};
        QTest::newRow("check failed") << failed;
        LauncherStatus transfer;
        transfer.type = LauncherStatus::Type::Transfer;
        transfer.transferNode = 1;
        transfer.transferHost = "h1";
        transfer.transfer.path = "/m/model.safetensors";
        transfer.transfer.bytes = 1ULL << 40;
        transfer.transfer.bytesDone = 12345;
        QTest::newRow("transfer") << transfer;
        LauncherStatus note;
        note.text = "node 0 (h0): reconnected";
        QTest::newRow("note") << note;
        LauncherStatus refused;
        refused.type = LauncherStatus::Type::PreflightFailed;
        refused.problems = {"node 0 (h0): port 29500 cannot be listened on"};
        QTest::newRow("preflight failed") << refused;
        LauncherStatus end;
        end.type = LauncherStatus::Type::End;
        end.outcome = "failed";
        end.runId = "r-1";
        end.text = "node 1 (h1): exit status 1";
        QTest::newRow("end") << end;
    }
    void readsBackWhatItWrites()
    {
        QFETCH(LauncherStatus, status);
        const std::string line = tb::remote::toJsonLine(status);
        QVERIFY2(line.find('\n') == std::string::npos, line.c_str()); // one status, one line
        const auto read = tb::remote::parseLauncherStatus(line);
        QVERIFY2(read.ok(), read.ok() ? "" : read.error().message.c_str());
        QCOMPARE(tb::remote::toJsonLine(*read), line);
        QCOMPARE(int(read->type), int(status.type));
        QCOMPARE(read->node.exitCode, status.node.exitCode);
        QCOMPARE(read->node.runFolder, status.node.runFolder);
        QCOMPARE(read->node.problems, status.node.problems);
        QCOMPARE(read->transfer.bytes, status.transfer.bytes);
    }

    void refusesWhatIsNotAStatus_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("expected");
        QTest::newRow("a line for people") << "node 0 h0 running"
                                           << "not a JSON object";
        QTest::newRow("a list") << "[1, 2]"
                                << "not a JSON object";
        QTest::newRow("no type") << "{\"node\": 0}"
                                 << "field 'type': got nothing, expected node, transfer";
        QTest::newRow("unknown type") << "{\"type\": \"nodes\"}"
                                      << "field 'type': got \"nodes\"";
        QTest::newRow("missing host") << "{\"type\": \"node\", \"node\": 0, \"state\": \"running\"}"
                                      << "field 'host' is missing";
        QTest::newRow("node as text")
            << "{\"type\": \"node\", \"node\": \"0\", \"host\": \"h\", \"state\": \"running\"}"
            << "field 'node': got \"0\"";
        QTest::newRow("unknown state")
            << "{\"type\": \"node\", \"node\": 0, \"host\": \"h\", \"state\": \"sleeping\"}"
            << "field 'state': got \"sleeping\", expected connecting";
        QTest::newRow("problems not a list")
            << "{\"type\": \"preflight_failed\", \"problems\": \"disk\"}"
            << "field 'problems': got \"disk\"";
    }
    void refusesWhatIsNotAStatus()
    {
        QFETCH(QString, line);
        QFETCH(QString, expected);
        const auto read = tb::remote::parseLauncherStatus(line.toStdString());
        QVERIFY(!read.ok());
        QVERIFY2(QString::fromStdString(read.error().message).contains(expected),
            read.error().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestLauncherStatus)
#include "test_launcher_status.moc"
