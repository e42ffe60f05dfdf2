// The hostfile (DeepSpeed's format) and --include/--exclude, and the node
// facts a multi-node preflight compares (the run registry: test_run_registry).
#include "launch/hostfile.h"
#include "launch/node_facts.h"
#include "launch/run_registry.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

using tb::launch::HostSlots;

namespace {

// "user@host:port/0,1,2 ..." for each node, to compare in one string.
QString describe(const std::vector<HostSlots>& hosts)
{
    QStringList parts;
    for (const HostSlots& h : hosts) {
        QStringList slotList;
        for (int slot : h.slotIndices)
            slotList << QString::number(slot);
        parts << QString::fromStdString(h.address()) + "/" + slotList.join(',')
                + (h.slotsRestricted ? "!" : "");
    }
    return parts.join(' ');
}

tb::launch::NodeFacts facts()
{
    tb::launch::NodeFacts f;
    f.hostName = "here";
    f.version = "0.1.0";
    f.buildId = "abc";
    f.device = "cpu";
    f.runDir = "/runs/a";
    f.inputs = {{"/runs/a.yaml", 100}, {"/models/m/model.safetensors", 5000}};
    f.gpuCount = -1;
    f.gpuNote = "nvidia-smi not found";
    f.freeDiskBytes = 1 << 30;
    f.diskNeededBytes = 1 << 20;
    return f;
}

} // namespace

class TestHostfile : public QObject {
    Q_OBJECT

private slots:
    void parses_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::newRow("DeepSpeed's example") << "worker-1 slots=4\nworker-2 slots=4\n"
                                             << "worker-1/0,1,2,3 worker-2/0,1,2,3";
        QTest::newRow("comments and blanks")
            << "# nodes\n\n  gpu1 slots=2   # the first\n\t\ngpu2 slots=1"
            << "gpu1/0,1 gpu2/0";
        QTest::newRow("user and port") << "ubuntu@10.0.0.4:2222 slots=8"
                                       << "ubuntu@10.0.0.4:2222/0,1,2,3,4,5,6,7";
        QTest::newRow("IPv6 in brackets") << "[fe80::1]:22 slots=1"
                                          << "fe80::1:22/0";
        QTest::newRow("same host, two ports") << "h:22 slots=1\nh:23 slots=1"
                                              << "h:22/0 h:23/0";
        QTest::newRow("CRLF") << "a slots=1\r\nb slots=2\r\n"
                              << "a/0 b/0,1";
    }

    void parses()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        const auto hosts = tb::launch::parseHostfile(text.toStdString(), "hosts");
        QVERIFY2(hosts.ok(), hosts.ok() ? "" : hosts.error().message.c_str());
        QCOMPARE(describe(*hosts), expected);
    }

    void refusesWithFileLineAndValue_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");
        QTest::newRow("no slots") << "a slots=1\nb"
                                  << "hosts:2: host 'b' has no slots=N";
        QTest::newRow("zero slots") << "a slots=0"
                                    << "hosts:1: 'slots=0': expected slots=N with N from 1 to 1024";
        QTest::newRow("not a number") << "a slots=four"
                                      << "hosts:1: 'slots=four'";
        QTest::newRow("another key") << "a max_slots=2"
                                     << "hosts:1: 'max_slots=2'";
        QTest::newRow("extra word") << "a slots=1 gpu"
                                    << "hosts:1: unexpected 'gpu' after 'slots=1'";
        QTest::newRow("duplicate") << "a slots=1\n# x\na slots=2"
                                   << "hosts:3: host 'a' is already on line 1";
        QTest::newRow("bad port") << "a:99999 slots=1"
                                  << "hosts:1: host 'a:99999': port '99999' is not 1 to 65535";
        QTest::newRow("empty port") << "a: slots=1"
                                    << "port '' is not 1 to 65535";
        QTest::newRow("empty user") << "@a slots=1"
                                    << "an empty user before '@'";
        QTest::newRow("user with ;")
            << "a;b@h slots=1"
            << "hosts:1: host 'a;b@h': user 'a;b': expected letters, digits, '.', '_' and '-' only";
        QTest::newRow("user with a command")
            << "x$(touch${IFS}/tmp/p)@h slots=1"
            << "user 'x$(touch${IFS}/tmp/p)': expected letters, digits";
        QTest::newRow("user like an option") << "-x@h slots=1"
                                             << "a user name does not start with '-'";
        QTest::newRow("no host") << "u@:22 slots=1"
                                 << "no host name";
        QTest::newRow("unclosed bracket") << "[fe80::1 slots=1"
                                          << "a '[' without its ']'";
        QTest::newRow("nothing") << "# only a comment\n\n"
                                 << "hosts: no hosts";
        QTest::newRow("a path") << "/etc/passwd slots=1"
                                << "a host name holds no '@', '/' or blank";
    }

    void refusesWithFileLineAndValue()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        const auto hosts = tb::launch::parseHostfile(text.toStdString(), "hosts");
        QVERIFY(!hosts.ok());
        QVERIFY2(QString::fromStdString(hosts.error().message).contains(expected),
            hosts.error().message.c_str());
    }

    void readsAFile()
    {
        const auto missing = tb::launch::readHostfile("/nonexistent/hosts");
        QVERIFY(!missing.ok());
        QVERIFY(QString::fromStdString(missing.error().message).contains("/nonexistent/hosts"));
        QTemporaryDir dir;
        const QString path = dir.filePath("hosts");
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("n1 slots=2\nn2 slots=x\n");
        file.close();
        const auto bad = tb::launch::readHostfile(path.toStdString());
        QVERIFY(!bad.ok());
        QVERIFY(QString::fromStdString(bad.error().message).startsWith(path + ":2: "));
    }

    void includesAndExcludes_data()
    {
        QTest::addColumn<QString>("include");
        QTest::addColumn<QString>("exclude");
        QTest::addColumn<QString>("expected"); // or "error: ..."
        QTest::newRow("nothing") << ""
                                 << ""
                                 << "a/0,1,2,3 b/0,1,2,3 c/0,1";
        QTest::newRow("include hosts") << "a@c"
                                       << ""
                                       << "a/0,1,2,3 c/0,1";
        QTest::newRow("include slots") << "b:1,3"
                                       << ""
                                       << "b/1,3!";
        QTest::newRow("include mixed") << "a@b:0"
                                       << ""
                                       << "a/0,1,2,3 b/0!";
        QTest::newRow("exclude a host") << ""
                                        << "b"
                                        << "a/0,1,2,3 c/0,1";
        QTest::newRow("exclude slots") << ""
                                       << "a:0,1@c:1"
                                       << "a/2,3! b/0,1,2,3 c/0!";
        QTest::newRow("exclude every slot of a host") << ""
                                                      << "c:0,1"
                                                      << "a/0,1,2,3 b/0,1,2,3";
        QTest::newRow("both") << "a"
                              << "b"
                              << "error: give one of them, not both";
        QTest::newRow("unknown host") << "z"
                                      << ""
                                      << "error: --include: host 'z' is not in the hostfile";
        QTest::newRow("unknown slot") << ""
                                      << "c:2"
                                      << "error: --exclude: c has no slot 2 (slots=2)";
        QTest::newRow("bad slot") << "a:x"
                                  << ""
                                  << "error: slot 'x' of a is not a number";
        QTest::newRow("everything excluded") << ""
                                             << "a@b@c"
                                             << "error: --exclude left no host to run on";
        QTest::newRow("empty host") << "a@"
                                    << ""
                                    << "error: --include 'a@': an empty host";
    }

    void includesAndExcludes()
    {
        QFETCH(QString, include);
        QFETCH(QString, exclude);
        QFETCH(QString, expected);
        auto hosts = tb::launch::parseHostfile("a slots=4\nb slots=4\nc slots=2\n", "hosts");
        QVERIFY(hosts.ok());
        const auto kept = tb::launch::filterHosts(
            std::move(hosts).value(), include.toStdString(), exclude.toStdString());
        if (expected.startsWith("error: ")) {
            QVERIFY(!kept.ok());
            QVERIFY2(QString::fromStdString(kept.error().message).contains(expected.mid(7)),
                kept.error().message.c_str());
            return;
        }
        QVERIFY2(kept.ok(), kept.ok() ? "" : kept.error().message.c_str());
        QCOMPARE(describe(*kept), expected);
    }

    void comparesNodeFacts_data()
    {
        QTest::addColumn<int>("change");
        QTest::addColumn<int>("slotCount");
        QTest::addColumn<QString>("expected"); // empty: no problem
        QTest::newRow("the same") << 0 << 1 << "";
        QTest::newRow("another build id") << 1 << 1
                                          << "node 1 (b): runs another build of tunebench-cli "
                                             "(0.1.0, build id xyz; here 0.1.0, build id abc)";
        QTest::newRow("config does not load")
            << 2 << 1 << "node 1 (b): the run config does not load there: bad field";
        QTest::newRow("weights missing")
            << 3 << 1 << "node 1 (b): /models/m/model.safetensors is missing";
        QTest::newRow("weights of another size")
            << 4 << 1 << "node 1 (b): /models/m/model.safetensors is 4000 bytes there, 5000 here";
        QTest::newRow("cuda without nvidia-smi")
            << 5 << 2 << "node 1 (b): 2 rank(s) on CUDA but nvidia-smi not found";
        QTest::newRow("cuda, fewer GPUs than slots")
            << 6 << 8 << "node 1 (b): 8 rank(s) on CUDA but 4 GPU(s)";
        QTest::newRow("cuda, enough GPUs") << 6 << 4 << "";
        QTest::newRow("auto on a CPU node") << 7 << 4 << "";
        QTest::newRow("auto, fewer GPUs than slots")
            << 8 << 8 << "node 1 (b): 8 rank(s) on CUDA but 4 GPU(s)";
        QTest::newRow("disk full") << 9 << 1
                                   << "node 1 (b): 512.0 KiB free at /runs/a, the run's "
                                      "checkpoints and export need about 1.0 MiB";
    }

    void comparesNodeFacts()
    {
        QFETCH(int, change);
        QFETCH(int, slotCount);
        QFETCH(QString, expected);
        const tb::launch::NodeFacts here = facts();
        tb::launch::NodeFacts there = facts();
        switch (change) {
        case 1:
            there.buildId = "xyz";
            break;
        case 2:
            there.configError = "bad field";
            break;
        case 3:
            there.inputs.pop_back();
            break;
        case 4:
            there.inputs.back().bytes = 4000;
            break;
        case 5:
            there.device = "cuda";
            break;
        case 6:
            there.device = "cuda";
            there.gpuCount = 4;
            break;
        case 7:
            there.device = "auto";
            break;
        case 8:
            there.device = "auto";
            there.gpuCount = 4;
            break;
        case 9:
            there.freeDiskBytes = 512 << 10;
            break;
        default:
            break;
        }
        const std::vector<std::string> problems =
            tb::launch::compareNodeFacts(here, there, "node 1 (b)", slotCount);
        if (expected.isEmpty()) {
            QVERIFY2(problems.empty(), problems.empty() ? "" : problems.front().c_str());
            return;
        }
        QCOMPARE(problems.size(), size_t(1));
        QCOMPARE(QString::fromStdString(problems.front()), expected);
    }

    void nodeFactsRoundTripAndRefuseForeignReplies()
    {
        const tb::launch::NodeFacts here = facts();
        const auto back =
            tb::launch::nodeFactsFromJson(tb::launch::nodeFactsToJson(here).dump(), "node 1 (b)");
        QVERIFY(back.ok());
        QVERIFY(tb::launch::compareNodeFacts(here, *back, "node 1 (b)", 1).empty());
        QCOMPARE(back->freeDiskBytes, here.freeDiskBytes);
        const auto foreign = tb::launch::nodeFactsFromJson("tunebench-cli 0.0.9\n", "node 1 (b)");
        QVERIFY(!foreign.ok());
        QVERIFY(QString::fromStdString(foreign.error().message)
                    .startsWith("node 1 (b): 'tunebench-cli node-check' answered"));
    }

    // A host answering JSON nested deeper than the reader allows: an Error
    // naming the host, where the exception once ended the program (found by
    // fuzz_registry_entry and fuzz_node_facts).
    void tooDeepAnswersAreRefusedNotFatal()
    {
        const std::string deep =
            "{\"run_id\":" + std::string(100, '[') + std::string(100, ']') + "}";
        const auto entry = tb::launch::registryEntryFromJson(deep, "host h");
        QVERIFY(!entry.ok());
        QVERIFY2(entry.error().message.find("host h") != std::string::npos
                && entry.error().message.find("nested deeper than 64 levels") != std::string::npos,
            entry.error().message.c_str());
        const auto facts = tb::launch::nodeFactsFromJson(deep, "node 1 (b)");
        QVERIFY(!facts.ok());
        QVERIFY2(facts.error().message.find("node 1 (b)") != std::string::npos,
            facts.error().message.c_str());
    }

    void nodeFactsNumbersAreChecked()
    {
        nlohmann::json json = tb::launch::nodeFactsToJson(facts());
        json["gpu_count"] = 1e300;
        const auto read = tb::launch::nodeFactsFromJson(json.dump(), "node 1 (b)");
        QVERIFY(!read.ok());
        QVERIFY2(read.error().message.find("'gpu_count' is 1e+300") != std::string::npos,
            read.error().message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestHostfile)
#include "test_hostfile.moc"
