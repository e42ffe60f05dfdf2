// The item models of a multi-node run and of a host's run registry, under
// QAbstractItemModelTester: each node's state as the launch's status lines
// report it (a preflight that names every
// host's problem included), the Hosts page's inventory picked from with a
// slot count each and written as a DeepSpeed hostfile.
#include "hosts/hosts_model.h"
#include "monitor/registry_model.h"
#include "runs/cluster_hosts_model.h"
#include "runs/cluster_panel.h"
#include "runs/node_state_model.h"

#include <QAbstractItemModelTester>
#include <QFile>
#include <QtTest>

using namespace tb::ui;
using tb::remote::NodeState;

namespace {

// A status as the launch writes it and the Runs page reads it back.
tb::remote::LauncherStatus throughTheWire(const tb::remote::LauncherStatus& status)
{
    const auto read = tb::remote::parseLauncherStatus(tb::remote::toJsonLine(status));
    if (!read)
        qFatal("%s", read.error().message.c_str());
    return *read;
}

tb::remote::LauncherStatus nodeStatus(
    int node, const std::string& host, NodeState state, const std::string& detail)
{
    tb::remote::LauncherStatus status;
    status.type = tb::remote::LauncherStatus::Type::Node;
    status.node = {node, host, state, detail};
    return throughTheWire(status);
}

tb::remote::SshTarget target(const std::string& user, const std::string& host, int port,
    const std::string& key = "/k/id", const std::string& knownHosts = "/k/known")
{
    tb::remote::SshTarget t;
    t.user = user;
    t.host = host;
    t.port = port;
    t.identityFile = key;
    t.knownHostsFile = knownHosts;
    return t;
}

} // namespace

class TestClusterModels : public QObject {
    Q_OBJECT

private slots:
    void nodeStatesFollowTheLaunch()
    {
        NodeStateModel model;
        QAbstractItemModelTester tester(
            &model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.reset({QStringLiteral("a@h0:22"), QStringLiteral("a@h1:22")});
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.state(1), QStringLiteral("preflight"));
        QVERIFY(model.apply(nodeStatus(0, "a@h0:22", NodeState::Checked, "preflight passed")));
        QVERIFY(model.apply(nodeStatus(1, "a@h1:22", NodeState::Checked, "preflight passed")));
        QVERIFY(model.apply(nodeStatus(0, "a@h0:22", NodeState::Starting, "")));
        QCOMPARE(model.state(0), QStringLiteral("starting"));
        tb::remote::LauncherStatus transfer;
        transfer.type = tb::remote::LauncherStatus::Type::Transfer;
        transfer.transferNode = 1;
        transfer.transferHost = "a@h1:22";
        transfer.transfer.path = "/m/model.safetensors";
        transfer.transfer.bytes = 1258291;
        transfer.transfer.bytesDone = 528482;
        QVERIFY(model.apply(throughTheWire(transfer)));
        QCOMPARE(model.state(1), QStringLiteral("copying inputs"));
        QCOMPARE(model.detail(1), QStringLiteral("42.0% of 1.2 MiB  /m/model.safetensors"));
        tb::remote::LauncherStatus running =
            nodeStatus(0, "a@h0:22", NodeState::Running, "launcher pid 7");
        // The folder may hold anything a path can, ", log /" included.
        running.node.runFolder = "/r/x, log /y";
        QVERIFY(model.apply(throughTheWire(running)));
        QCOMPARE(model.runFolder(), QStringLiteral("/r/x, log /y"));
        tb::remote::LauncherStatus note;
        note.text = "step 1/4 loss 5.5";
        QVERIFY(!model.apply(throughTheWire(note)));
        // A host's words with markup in them: shown as written, never as HTML.
        tb::remote::LauncherStatus exited =
            nodeStatus(1, "a@h1:22", NodeState::Exited, "rank 1 failed: <b>loss</b> & <img src=x>");
        exited.node.exitCode = 1;
        QVERIFY(model.apply(throughTheWire(exited)));
        QCOMPARE(model.state(1), QStringLiteral("exited 1"));
        QCOMPARE(model.data(model.index(1, NodeStateModel::Detail), Qt::ToolTipRole).toString(),
            QStringLiteral(
                "<p style='white-space:pre-wrap'>rank 1 failed: &lt;b&gt;loss&lt;/b&gt; &amp; "
                "&lt;img src=x&gt;</p>"));
        QCOMPARE(
            model.data(model.index(1, NodeStateModel::State), Qt::ForegroundRole).isValid(), true);
        QCOMPARE(
            model.data(model.index(0, NodeStateModel::State), Qt::ForegroundRole).isValid(), false);
    }

    void preflightProblemsNameTheirHosts()
    {
        NodeStateModel model;
        QAbstractItemModelTester tester(
            &model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.reset({QStringLiteral("h0"), QStringLiteral("h1"), QStringLiteral("h2")});
        model.apply(nodeStatus(0, "h0", NodeState::Checked, "preflight passed"));
        tb::remote::LauncherStatus one = nodeStatus(1, "h1", NodeState::CheckFailed, "");
        one.node.problems = {"node 1 (h1): the host key of h1 is not in /k"};
        tb::remote::LauncherStatus two = nodeStatus(2, "h2", NodeState::CheckFailed, "");
        two.node.problems = {"node 2 (h2): another build of tunebench-cli",
            "node 2 (h2): 100 GiB free, 300 GiB needed"};
        QVERIFY(model.apply(throughTheWire(one)));
        QVERIFY(model.apply(throughTheWire(two)));
        tb::remote::LauncherStatus refused;
        refused.type = tb::remote::LauncherStatus::Type::PreflightFailed;
        refused.problems = {one.node.problems[0], two.node.problems[0], two.node.problems[1]};
        QVERIFY(model.apply(throughTheWire(refused)));
        model.launcherFinished(2);
        QCOMPARE(model.problems().size(), 3);
        QCOMPARE(model.state(0), QStringLiteral("preflight passed"));
        QCOMPARE(model.state(1), QStringLiteral("preflight failed"));
        QCOMPARE(model.detail(1), QStringLiteral("node 1 (h1): the host key of h1 is not in /k"));
        QCOMPARE(model.state(2), QStringLiteral("preflight failed"));
        QCOMPARE(model.detail(2),
            QStringLiteral("node 2 (h2): another build of tunebench-cli\n"
                           "node 2 (h2): 100 GiB free, 300 GiB needed"));
    }

    void picksHostsFromTheInventory()
    {
        HostsModel inventory;
        ClusterHostsModel model;
        QAbstractItemModelTester tester(
            &model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setInventory(&inventory);
        QCOMPARE(model.rowCount(), 0); // this machine is not an SSH host
        QVERIFY(inventory.addHost(target("root", "10.0.0.10", 22)));
        QVERIFY(inventory.addHost(target("", "gpu-b", 0)));
        QVERIFY(inventory.addHost(target("ann", "gpu-c", 2222)));
        QCOMPARE(model.rowCount(), 3);
        QVERIFY(model.pick(QStringLiteral("ann@gpu-c:2222"), 4));
        QVERIFY(model.pick(QStringLiteral("root@10.0.0.10:22"), 2));
        QVERIFY(!model.setData(model.index(0, ClusterHostsModel::Slots), 0, Qt::EditRole));
        QVERIFY(!model.pick(QStringLiteral("nobody"), 1));
        QCOMPARE(hostfileText(model.pickedNodes()),
            QStringLiteral("# written by the Tunebench Runs page: node 0 first\n"
                           "root@10.0.0.10:22 slots=2\nann@gpu-c:2222 slots=4\n"));
        // The inventory changes: picks stay with their hosts.
        inventory.removeRow(1);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.pickedNodes().size(), size_t(1));
        QCOMPARE(model.pickedNodes().front().slotCount, 4);
    }

    void panelWritesTheHostfileAndTheArguments()
    {
        HostsModel inventory;
        ClusterPanel panel;
        panel.setInventory(&inventory);
        QString error;
        QVERIFY(!panel.launchArguments(QStringLiteral("/c/run.yaml"), &error));
        QVERIFY2(error.contains(QStringLiteral("pick at least one host")), qPrintable(error));
        inventory.addHost(target("root", "h0", 22));
        inventory.addHost(target("root", "h1", 22, "/k/other"));
        panel.hostsModel()->pick(QStringLiteral("root@h0:22"), 1);
        panel.hostsModel()->pick(QStringLiteral("root@h1:22"), 1);
        QVERIFY(!panel.launchArguments(QStringLiteral("/c/run.yaml"), &error));
        QVERIFY2(error.contains(QStringLiteral("use different keys")), qPrintable(error));
        panel.hostsModel()->setData(panel.hostsModel()->index(1, ClusterHostsModel::Host),
            Qt::Unchecked, Qt::CheckStateRole);
        panel.setTrainerArguments({QStringLiteral("--threads"), QStringLiteral("1"),
            QStringLiteral("--output"), QStringLiteral("/o/my run")});
        panel.setSync(true);
        const std::optional<QStringList> arguments =
            panel.launchArguments(QStringLiteral("/c/run.yaml"), &error);
        QVERIFY2(arguments, qPrintable(error));
        QCOMPARE(*arguments,
            QStringList({"launch", "/c/run.yaml", "--hostfile", panel.hostfilePath(),
                "--status-json", "--ssh-key", "/k/id", "--known-hosts", "/k/known", "--sync", "--",
                "--threads", "1", "--output", "/o/my run"}));
        QFile hostfile(panel.hostfilePath());
        QVERIFY(hostfile.open(QIODevice::ReadOnly));
        QVERIFY(hostfile.readAll().endsWith("\nroot@h0:22 slots=1\n"));
        QCOMPARE(panel.nodesModel()->rowCount(), 1);
        QCOMPARE(panel.nodesModel()->state(0), QStringLiteral("preflight"));
    }

    void registryRows()
    {
        RegistryModel model;
        QAbstractItemModelTester tester(
            &model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        tb::launch::RegistryEntry running;
        running.runId = "r2";
        running.nodeRank = 0;
        running.nnodes = 2;
        running.pid = 41;
        running.runDir = "/runs/r2";
        tb::launch::RegistryEntry failed = running;
        failed.runId = "r1";
        failed.state = "exited";
        failed.exitCode = 1;
        failed.summary = "rank 1 failed <i>&</i>";
        tb::launch::RegistryEntry stopped = failed;
        stopped.runId = "r0";
        stopped.exitCode = 143;
        stopped.stoppedOnRequest = true;
        model.setEntries({running, failed, stopped});
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.data(model.index(0, RegistryModel::Node), Qt::DisplayRole).toString(),
            QStringLiteral("0/2"));
        QCOMPARE(model.data(model.index(0, RegistryModel::State), Qt::DisplayRole).toString(),
            QStringLiteral("running"));
        QCOMPARE(model.data(model.index(1, RegistryModel::State), Qt::DisplayRole).toString(),
            QStringLiteral("exit 1"));
        QVERIFY(model.data(model.index(1, RegistryModel::State), Qt::ForegroundRole).isValid());
        // A stop the user asked for ends 128+SIGTERM: told apart, not shown as a failure.
        QCOMPARE(model.data(model.index(2, RegistryModel::State), Qt::DisplayRole).toString(),
            QStringLiteral("stopped (exit 143)"));
        QVERIFY(!model.data(model.index(2, RegistryModel::State), Qt::ForegroundRole).isValid());
        QCOMPARE(model.data(model.index(1, RegistryModel::Run), Qt::ToolTipRole).toString(),
            QStringLiteral(
                "<p style='white-space:pre-wrap'>rank 1 failed &lt;i&gt;&amp;&lt;/i&gt;</p>"));
        model.setEntries({});
        QCOMPARE(model.rowCount(), 0);
    }
};

QTEST_MAIN(TestClusterModels)
#include "test_cluster_models.moc"
