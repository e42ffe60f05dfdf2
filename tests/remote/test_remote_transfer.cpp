// `tunebench-cli fetch` and --sync's copies against a real OpenSSH sshd on
// loopback: nothing written outside the folder fetched to, whatever the host
// names, and checksums given the time their file's size needs, against a
// host whose sha256sum answers late.
#include "../support/event_lines.h"
#include "remote_cli.h"

#include "launch/run_registry.h"
#include "remote/file_checksums.h"
#include "remote/sftp_transfer.h"
#include "remote/ssh_session.h"

#include <QElapsedTimer>
#include <QtTest>

#include <random>

using tb::remote::SshSession;
using tb::remote::SshTarget;
using tb::test::appendLine;
using tb::test::CliRun;
using tb::test::runCli;

class TestRemoteTransfer : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        const QString failure = m_server.start();
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        QVERIFY(writeSlowSha256sum(m_slowHashServer.path("bin")));
        const QString slowFailure = m_slowHashServer.start(false, m_slowHashServer.path("bin"));
        QVERIFY2(slowFailure.isEmpty(), qPrintable(slowFailure));
        QVERIFY(m_work.isValid());
    }

    // `fetch` writes only inside the folder it fetches to, whatever the host
    // names (docs/MONITOR.md, "Fetching outputs"): the run folder there holds
    // adapter/adapter_config.json and adapter/sub/weights.bin, and each row
    // adds something hostile or awkward. A folder beside it, "outside", must
    // stay as it was, and nothing may appear beside the test's folders.
    void fetchStaysInsideItsFolder_data()
    {
        QTest::addColumn<QString>("twist");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("a tree with a symlink to a folder outside")
            << "remote-symlink" << 0 << "2 file(s) copied";
        QTest::newRow("a folder name holding a newline")
            << "newline" << 1 << "entry 'a\\x0a5 ..': holds a control character";
        QTest::newRow("a symlink here where the partial copy goes")
            << "local-symlink" << 1 << "cannot write";
        QTest::newRow("a symlink here where a folder goes")
            << "local-folder-symlink" << 1 << "sub: is a symbolic link here";
        QTest::newRow("a symlink here where the adapter folder goes")
            << "local-kind-symlink" << 1 << "adapter is a symbolic link";
        QTest::newRow("a folder of more entries than a run's exports hold")
            << "many-entries" << 1 << "holds more than 20000 entries";
        QTest::newRow("run folder with a trailing slash, default --to")
            << "trailing-slash" << 0 << "-> run/adapter";
        QTest::newRow("run folder ending in .., default --to")
            << "dotdot" << 2 << "cannot name a folder here";
        // The same two as the host's run registry answers them for --run.
        QTest::newRow("registry: run folder with a trailing slash, default --to")
            << "registry-trailing-slash" << 0 << "-> run/adapter";
        QTest::newRow("registry: run folder ending in .., default --to")
            << "registry-dotdot" << 2 << "cannot name a folder here";
    }

    void fetchStaysInsideItsFolder()
    {
        QFETCH(QString, twist);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        const QString base = m_work.filePath(QStringLiteral("fetch-%1").arg(++m_fetches));
        const QString run = base + "/remote/run";
        const QString outside = base + "/outside";
        const QString here = base + "/here";
        for (const QString& folder : {run + "/adapter/sub", outside, here})
            QVERIFY(QDir().mkpath(folder));
        appendLine(run + "/adapter/adapter_config.json", "{}");
        appendLine(run + "/adapter/sub/weights.bin", "0123456789");
        appendLine(outside + "/secret", "keep");
        QString runArgument = run;
        QStringList to{QStringLiteral("--to"), here + "/fetched"};
        if (twist == "remote-symlink")
            QVERIFY(QFile::link(outside, run + "/adapter/link"));
        if (twist == "newline") { // what `find -printf '%P\n'` would list as "5 ../x"
            QVERIFY(QDir().mkpath(run + "/adapter/a\n5 .."));
            appendLine(run + "/adapter/a\n5 ../x", "x");
        }
        if (twist == "local-folder-symlink") {
            QVERIFY(QDir().mkpath(here + "/fetched/adapter"));
            QVERIFY(QFile::link(outside, here + "/fetched/adapter/sub"));
        }
        if (twist == "local-kind-symlink") {
            QVERIFY(QDir().mkpath(here + "/fetched"));
            QVERIFY(QFile::link(outside, here + "/fetched/adapter"));
        }
        if (twist == "many-entries") { // refused while listing, before any copy
            for (int i = 0; i < 20001; ++i)
                QVERIFY(
                    QFile(run + "/adapter/sub/" + QString::number(i)).open(QIODevice::WriteOnly));
        }
        if (twist == "local-symlink") {
            QVERIFY(QDir().mkpath(here + "/fetched/adapter"));
            QVERIFY(QFile::link(
                outside + "/secret", here + "/fetched/adapter/adapter_config.json.tbpart"));
        }
        QStringList which{runArgument};
        if (twist.endsWith("trailing-slash") || twist.endsWith("dotdot")) {
            runArgument = twist.endsWith("dotdot") ? run + "/adapter/.." : run + "/";
            which = {runArgument};
            to.clear();
        }
        if (twist.startsWith("registry-")) {
            const QString cli = writeRegistryAnswer(base + "-registry-cli", runArgument);
            QVERIFY(!cli.isEmpty());
            which = {
                QStringLiteral("--run"), QStringLiteral("r1"), QStringLiteral("--remote-cli"), cli};
        }
        const CliRun result = runCli(QStringList{QStringLiteral("fetch")} + which
                + QStringList{QStringLiteral("--what"), QStringLiteral("adapter")} + to
                + tb::test::cliSshArguments(m_server),
            120000, here);
        QVERIFY2(result.exitCode == exitCode, qPrintable(result.out + result.err));
        QVERIFY2((result.out + result.err).contains(message), qPrintable(result.out + result.err));

        const auto entries = [](const QString& folder) {
            return QDir(folder).entryList(
                QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System);
        };
        QCOMPARE(entries(base), (QStringList{"here", "outside", "remote"}));
        QCOMPARE(entries(outside), QStringList{"secret"});
        QFile secret(outside + "/secret");
        QVERIFY(secret.open(QIODevice::ReadOnly));
        QCOMPARE(secret.readAll(), QByteArray("keep\n"));
        if (twist == "newline" || twist.endsWith("dotdot"))
            QCOMPARE(entries(here), QStringList{}); // refused before anything was written
        if (exitCode != 0)
            return;
        const QString fetched = here + (twist.endsWith("trailing-slash") ? "/run" : "/fetched");
        QFile weights(fetched + "/adapter/sub/weights.bin");
        QVERIFY(weights.open(QIODevice::ReadOnly));
        QCOMPARE(weights.readAll(), QByteArray("0123456789\n"));
        QCOMPARE(entries(fetched + "/adapter"), (QStringList{"adapter_config.json", "sub"}));
    }

    // A checksum's deadline is the SSH timeout plus its bytes at 50 MB/s
    // (review M2).
    void checksumDeadlineGrowsWithSize_data()
    {
        QTest::addColumn<double>("timeout");
        QTest::addColumn<qulonglong>("bytes");
        QTest::addColumn<double>("seconds");
        QTest::newRow("empty file") << 15.0 << qulonglong(0) << 15.0;
        QTest::newRow("256 MiB") << 15.0 << qulonglong(256) * 1024 * 1024
                                 << 15.0 + 268435456 / 50e6;
        QTest::newRow("a 5 GB shard") << 15.0 << qulonglong(5'000'000'000) << 115.0;
        QTest::newRow("a 15 GB merged export, --ssh-timeout 2")
            << 2.0 << qulonglong(15'000'000'000) << 302.0;
    }

    void checksumDeadlineGrowsWithSize()
    {
        QFETCH(double, timeout);
        QFETCH(qulonglong, bytes);
        QFETCH(double, seconds);
        QCOMPARE(tb::remote::checksumSeconds(timeout, bytes), seconds);
    }

    // A remote sha256sum that answers 17 s after it is asked (a slow disk)
    // is waited for when its file is large enough to take that long at
    // 50 MB/s, where a fixed 15 s once failed every try; a small file's
    // checksum still fails at its own deadline, naming it and --ssh-timeout.
    void fetchWaitsForASlowChecksumOfALargeFile_data()
    {
        QTest::addColumn<int>("mebibytes");
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("message");
        QTest::newRow("256 MiB, default 15 s timeout: 20.4 s for the checksum")
            << 256 << QStringList{} << 0 << "adapter: 1 file(s) copied";
        QTest::newRow("1 MiB, --ssh-timeout 5: 5.02 s for the checksum")
            << 1 << QStringList{QStringLiteral("--ssh-timeout"), QStringLiteral("5")} << 1
            << "did not finish within 6 s (give more time with --ssh-timeout SECONDS)";
    }

    void fetchWaitsForASlowChecksumOfALargeFile()
    {
        QFETCH(int, mebibytes);
        QFETCH(QStringList, options);
        QFETCH(int, exitCode);
        QFETCH(QString, message);
        const QString base = m_work.filePath(QStringLiteral("slow-%1").arg(mebibytes));
        const QString weights = base + "/remote/adapter/weights.bin";
        QVERIFY(QDir().mkpath(base + "/remote/adapter"));
        QVERIFY(writeNoise(weights, mebibytes));
        QElapsedTimer waited;
        waited.start();
        const CliRun result =
            runCli(QStringList{QStringLiteral("fetch"), base + "/remote", QStringLiteral("--what"),
                       QStringLiteral("adapter"), QStringLiteral("--to"), base + "/here"}
                + tb::test::cliSshArguments(m_slowHashServer) + options);
        qInfo(
            "%d MiB: fetch ended in %lld ms", mebibytes, static_cast<long long>(waited.elapsed()));
        QVERIFY2(result.exitCode == exitCode, qPrintable(result.out + result.err));
        QVERIFY2((result.out + result.err).contains(message), qPrintable(result.out + result.err));
        if (exitCode == 0)
            QCOMPARE(
                tb::remote::localSha256((base + "/here/adapter/weights.bin").toStdString()).value(),
                tb::remote::localSha256(weights.toStdString()).value());
    }

    // A file of 8 MiB or more is read over several SFTP channels at once;
    // the copy is the file byte for byte, from nothing or going on from a
    // part whose length falls inside a read (not a multiple of 32 KiB).
    void fetchStripesALargeFile_data()
    {
        QTest::addColumn<int>("mebibytes");
        QTest::addColumn<qint64>("partBytes");
        QTest::addColumn<QString>("summary");
        QTest::newRow("7 MiB, one channel") << 7 << qint64(0) << "1 file(s) copied (0 resumed";
        QTest::newRow("24 MiB, four channels") << 24 << qint64(0) << "1 file(s) copied (0 resumed";
        QTest::newRow("24 MiB, from a part of 9 MiB and 5 bytes")
            << 24 << qint64(9 * 1024 * 1024 + 5) << "1 file(s) copied (1 resumed";
    }

    void fetchStripesALargeFile()
    {
        QFETCH(int, mebibytes);
        QFETCH(qint64, partBytes);
        QFETCH(QString, summary);
        const QString base =
            m_work.filePath(QStringLiteral("striped-%1").arg(QTest::currentDataTag()));
        const QString weights = base + "/remote/adapter/weights.bin";
        QVERIFY(QDir().mkpath(base + "/remote/adapter"));
        QVERIFY(writeNoise(weights, mebibytes));
        if (partBytes > 0) {
            QFile source(weights);
            QVERIFY(source.open(QIODevice::ReadOnly));
            QVERIFY(QDir().mkpath(base + "/here/adapter"));
            QFile part(base + "/here/adapter/weights.bin.tbpart");
            QVERIFY(part.open(QIODevice::WriteOnly));
            QCOMPARE(part.write(source.read(partBytes)), partBytes);
        }
        const CliRun result =
            runCli(QStringList{QStringLiteral("fetch"), base + "/remote", QStringLiteral("--what"),
                       QStringLiteral("adapter"), QStringLiteral("--to"), base + "/here"}
                + tb::test::cliSshArguments(m_server));
        QVERIFY2(result.exitCode == 0, qPrintable(result.out + result.err));
        QVERIFY2(result.out.contains(summary), qPrintable(result.out));
        QCOMPARE(
            tb::remote::localSha256((base + "/here/adapter/weights.bin").toStdString()).value(),
            tb::remote::localSha256(weights.toStdString()).value());
    }

    // --sync's check that a node already has a file waits for the slow
    // checksum of a large one too, and skips the copy.
    void syncWaitsForASlowChecksumOfALargeFile()
    {
        const QString weights = m_work.filePath(QStringLiteral("slow-sync.bin"));
        QVERIFY(writeNoise(weights, 256));
        SshTarget slow = tb::test::loginTarget(m_slowHashServer);
        slow.timeoutSeconds = 15;
        auto session = SshSession::connect(slow);
        QVERIFY2(session.ok(), session.ok() ? "" : session.error().toString().c_str());
        const auto summary = tb::remote::uploadFiles(**session, {weights.toStdString()}, {});
        QVERIFY2(summary.ok(), summary.ok() ? "" : summary.error().toString().c_str());
        QCOMPARE(summary->skipped, 1);
        QCOMPARE(summary->copied, 0);
    }

private:
    // A tunebench-cli for --remote-cli whose run registry holds run r1,
    // ended, in `runDir` as given (a host's answer, trusted in nothing).
    static QString writeRegistryAnswer(const QString& cli, const QString& runDir)
    {
        tb::launch::RegistryEntry entry;
        entry.runId = "r1";
        entry.pid = 1;
        entry.state = "exited";
        entry.exitCode = 0;
        entry.runDir = runDir.toStdString();
        QFile script(cli);
        if (!script.open(QIODevice::WriteOnly))
            return {};
        script.write("#!/bin/sh\ncat <<'EOF'\n"
            + QByteArray::fromStdString(tb::launch::registryEntryToJson(entry)) + "\nEOF\n");
        script.close();
        script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
        return cli;
    }

    // A sha256sum that answers 17 s after it is asked, as over a slow disk:
    // longer than the default SSH timeout, shorter than a 256 MiB file's
    // checksum deadline.
    static bool writeSlowSha256sum(const QString& folder)
    {
        QFile script(folder + "/sha256sum");
        if (!QDir().mkpath(folder) || !script.open(QIODevice::WriteOnly))
            return false;
        script.write("#!/bin/sh\nsleep 17 &\nhash=$(/usr/bin/sha256sum \"$@\") || exit 1\nwait\n"
                     "printf '%s\\n' \"$hash\"\n");
        script.close();
        return script.setPermissions(script.permissions() | QFileDevice::ExeOwner);
    }

    // `mebibytes` MiB of pseudo-random bytes.
    static bool writeNoise(const QString& path, int mebibytes)
    {
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly))
            return false;
        std::mt19937_64 random(42);
        std::vector<uint64_t> block(1 << 17);
        for (int i = 0; i < mebibytes; ++i) {
            for (uint64_t& word : block)
                word = random();
            const auto bytes = qint64(block.size() * sizeof(uint64_t));
            if (file.write(reinterpret_cast<const char*>(block.data()), bytes) != bytes)
                return false;
        }
        return true;
    }

    tb::test::SshdServer m_server;
    tb::test::SshdServer m_slowHashServer; // its sha256sum answers after 17 s
    QTemporaryDir m_work;
    int m_fetches = 0;
};

QTEST_GUILESS_MAIN(TestRemoteTransfer)
#include "test_remote_transfer.moc"
