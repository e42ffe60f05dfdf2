// The run registry: an entry's numbers read by type and range, entries
// written, read and listed, a private folder, and no folder without a home.
#include "../support/file_mode.h"
#include "launch/run_registry.h"

#include <nlohmann/json.hpp>

#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

using tb::test::modeOf;

class TestRunRegistry : public QObject {
    Q_OBJECT

private slots:
    // A registry entry's numbers are read by type and range: a pid of -1
    // or 2^32 - 1 (-1 as a pid_t) would signal every process the user owns,
    // a float pid is undefined behaviour to cast.
    void registryEntryNumbersAreChecked_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");
        QTest::addRow("pid -1") << "pid"
                                << "-1";
        QTest::addRow("pid 2^32 - 1") << "pid"
                                      << "4294967295";
        QTest::addRow("pid 1e300") << "pid"
                                   << "1e300";
        QTest::addRow("pid as text") << "pid"
                                     << "\"42\"";
        QTest::addRow("node_rank beyond the nodes") << "node_rank"
                                                    << "4096";
        QTest::addRow("nproc 0") << "nproc"
                                 << "0";
        QTest::addRow("exit_code 1e9") << "exit_code"
                                       << "1000000000";
    }
    void registryEntryNumbersAreChecked()
    {
        QFETCH(QString, field);
        QFETCH(QString, value);
        tb::launch::RegistryEntry entry;
        entry.runId = "abc123";
        entry.nnodes = 2;
        entry.nodeRank = 1;
        entry.pid = 4242;
        nlohmann::json json = nlohmann::json::parse(tb::launch::registryEntryToJson(entry));
        QVERIFY(tb::launch::registryEntryFromJson(json.dump(), "entry.json").ok());
        json[field.toStdString()] = nlohmann::json::parse(value.toStdString());
        const auto read = tb::launch::registryEntryFromJson(json.dump(), "entry.json");
        QVERIFY(!read.ok());
        QVERIFY2(read.error().message.find("entry.json") != std::string::npos
                && read.error().message.find("'" + field.toStdString() + "' is")
                    != std::string::npos,
            read.error().message.c_str());
    }

    void registryEntriesAreWrittenReadAndListed()
    {
        QTemporaryDir dir;
        tb::launch::RegistryEntry entry;
        entry.runId = "abc123";
        entry.nodeRank = 1;
        entry.nnodes = 2;
        entry.pid = 999999999; // no such process: a running entry reads "vanished"
        entry.config = "/runs/a b.yaml";
        entry.runDir = "/runs/a b";
        entry.startedAt = "2026-11-24T10:00:00Z";
        const std::string path =
            tb::launch::registryEntryPath(dir.path().toStdString() + "/runs", entry.runId, 1);
        QCOMPARE(QString::fromStdString(path), dir.path() + "/runs/abc123.node1.json");
        QVERIFY(tb::launch::writeRegistryEntry(path, entry).ok());
        const auto read = tb::launch::readRegistryEntry(path);
        QVERIFY(read.ok());
        QCOMPARE(read->config, entry.config);
        QFile broken(dir.path() + "/runs/broken.json");
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write("{\"run_id\": 3");
        broken.close();
        std::vector<std::string> unreadable;
        const auto listed =
            tb::launch::listRegistry(dir.path().toStdString() + "/runs", &unreadable);
        QVERIFY(listed.ok());
        QCOMPARE(listed->size(), size_t(1));
        QCOMPARE(listed->front().state, std::string("vanished"));
        QCOMPARE(unreadable.size(), size_t(1));
        QVERIFY(QString::fromStdString(unreadable.front()).contains("broken.json"));
    }

    // The registry is private: made 0700 with 0600 entries (a folder of ours
    // made 0755 by earlier versions is closed), and a folder another user
    // owns, or that others may write to, is refused for reading and writing.
    void registryFolderIsPrivate_data()
    {
        QTest::addColumn<QString>("before");
        QTest::addColumn<QString>("refusal"); // empty: accepted
        QTest::newRow("missing") << "missing"
                                 << "";
        QTest::newRow("ours, 0700") << "0700"
                                    << "";
        QTest::newRow("ours, 0755") << "0755"
                                    << "";
        QTest::newRow("group-writable") << "0770"
                                        << "mode 0770 lets other users write to it, expected 0700";
        QTest::newRow("world-writable, sticky") << "1777"
                                                << "mode 1777 lets other users write to it";
        QTest::newRow("another user's") << "other"
                                        << "owned by uid ";
        QTest::newRow("a file") << "file"
                                << "not a folder";
    }

    void registryFolderIsPrivate()
    {
        QFETCH(QString, before);
        QFETCH(QString, refusal);
        QTemporaryDir base;
        std::string dir = base.path().toStdString() + "/runs";
        if (before == "file") {
            QFile file(QString::fromStdString(dir));
            QVERIFY(file.open(QIODevice::WriteOnly));
        } else if (before == "other" && ::geteuid() != 0) {
            dir = "/"; // root's: another user's for this one
        } else if (before != "missing") {
            QVERIFY(::mkdir(dir.c_str(), 0700) == 0);
            if (before == "other")
                QVERIFY(::chown(dir.c_str(), 65534, 65534) == 0);
            else
                QVERIFY(::chmod(dir.c_str(), mode_t(before.toUInt(nullptr, 8))) == 0);
        }
        tb::launch::RegistryEntry entry;
        entry.runId = "r1";
        const std::string path = tb::launch::registryEntryPath(dir, entry.runId, 0);
        const auto listed = tb::launch::listRegistry(dir);
        const tb::common::Status written = tb::launch::writeRegistryEntry(path, entry);
        if (refusal.isEmpty()) {
            QVERIFY2(listed.ok(), listed.ok() ? "" : listed.error().message.c_str());
            QVERIFY2(written.ok(), written.ok() ? "" : written.error().message.c_str());
            QCOMPARE(modeOf(dir), 0700);
            QCOMPARE(modeOf(path), 0600);
            return;
        }
        QVERIFY(!listed.ok() && !written.ok());
        for (const tb::common::Error& error : {listed.error(), written.error()}) {
            QVERIFY2(
                QString::fromStdString(error.message).contains(refusal), error.message.c_str());
            QVERIFY2(
                error.message.starts_with("run registry '" + dir + "': "), error.message.c_str());
        }
        QVERIFY(!QFile::exists(QString::fromStdString(path)));
    }

    // No shared fallback (once /tmp, where anyone could plant the registry):
    // without an absolute HOME or XDG_STATE_HOME there is no registry.
    void registryFolderNeedsAHome_data()
    {
        QTest::addColumn<QString>("home"); // "-": unset
        QTest::addColumn<QString>("state");
        QTest::addColumn<QString>("expected"); // the folder, or "error: <fragment>"
        QTest::newRow("HOME") << "/home/u"
                              << "-"
                              << "/home/u/.local/state/tunebench/runs";
        QTest::newRow("XDG_STATE_HOME first") << "/home/u"
                                              << "/state"
                                              << "/state/tunebench/runs";
        QTest::newRow("XDG_STATE_HOME relative") << "/home/u"
                                                 << "state"
                                                 << "/home/u/.local/state/tunebench/runs";
        QTest::newRow("no HOME") << "-"
                                 << "-"
                                 << "error: run registry: HOME is not set and XDG_STATE_HOME";
        QTest::newRow("HOME relative") << "home"
                                       << "-"
                                       << "error: HOME is 'home'";
        QTest::newRow("only XDG_STATE_HOME") << "-"
                                             << "/state"
                                             << "/state/tunebench/runs";
    }

    void registryFolderNeedsAHome()
    {
        QFETCH(QString, home);
        QFETCH(QString, state);
        QFETCH(QString, expected);
        const QByteArray savedHome = qgetenv("HOME");
        const QByteArray savedState = qgetenv("XDG_STATE_HOME");
        const bool hadState = qEnvironmentVariableIsSet("XDG_STATE_HOME");
        const auto set = [](const char* name, const QString& value) {
            if (value == "-")
                qunsetenv(name);
            else
                qputenv(name, value.toUtf8());
        };
        set("HOME", home);
        set("XDG_STATE_HOME", state);
        const auto dir = tb::launch::registryDir();
        qputenv("HOME", savedHome);
        if (hadState)
            qputenv("XDG_STATE_HOME", savedState);
        else
            qunsetenv("XDG_STATE_HOME");
        if (expected.startsWith("error: ")) {
            QVERIFY(!dir.ok());
            QVERIFY2(QString::fromStdString(dir.error().message).contains(expected.mid(7)),
                dir.error().message.c_str());
            return;
        }
        QVERIFY(dir.ok());
        QCOMPARE(QString::fromStdString(*dir), expected);
    }
};

QTEST_GUILESS_MAIN(TestRunRegistry)
#include "test_run_registry.moc"
