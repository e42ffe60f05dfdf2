// Remote commands run the same whatever the user's login shell (review L1):
// sshd hands the exec request to that shell, and fish reads \' inside '...'
// as an escape, so POSIX quoting alone let a path end its quote early and run
// what followed. Against a real OpenSSH sshd on loopback whose user's shell
// is fish, tcsh, bash or dash, through the same session code and quoting
// that sync, fetch and the launcher use.
#include "../support/skip.h"
#include "sshd_target.h"

#include "launch/text_quote.h"
#include "remote/ssh_session.h"

#include <QtTest>

#include <algorithm>
#include <cstring>

using tb::remote::SshSession;

class TestLoginShells : public QObject {
    Q_OBJECT

    QTemporaryDir m_work;

    // A session to a new sshd whose user logs in with `shell`, or null with
    // the test failed.
    std::unique_ptr<SshSession> connectWithShell(tb::test::SshdServer& server, const QString& shell)
    {
        server.setLoginShell(shell);
        if (const QString failure = server.start(); !failure.isEmpty()) {
            QTest::qFail(qPrintable(failure), __FILE__, __LINE__);
            return nullptr;
        }
        auto session = SshSession::connect(tb::test::loginTarget(server, 20));
        if (!session.ok()) {
            QTest::qFail(session.error().toString().c_str(), __FILE__, __LINE__);
            return nullptr;
        }
        return std::move(session).value();
    }

    // Folder names that end a quote early, substitute a command or expand
    // under one shell or another; each would touch `marker` if it did.
    static QStringList hostileNames(const QString& marker)
    {
        return {
            "a\\'; touch " + marker + "; #", // fish: \' is an escape inside '...'
            "b$(touch " + marker + ")",
            "c`touch " + marker + "`",
            "=touch", // zsh: =cmd is the path of cmd
            "d!1 e", // tcsh: history expansion, even in quotes, when interactive
            "f'\"; touch " + marker + "; \"'",
        };
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_work.isValid());
        if (::geteuid() != 0)
            TB_SKIP(
                "a login shell other than the user's needs root: sshd starts in a mount namespace "
                "with its own /etc/passwd");
    }

    void quotedPathsStayPaths_data()
    {
        QTest::addColumn<QString>("shell");
        QTest::newRow("fish") << "/usr/bin/fish";
        QTest::newRow("tcsh") << "/usr/bin/tcsh";
        QTest::newRow("bash") << "/bin/bash";
        QTest::newRow("dash") << "/bin/dash";
    }

    // mkdir -p of each hostile name makes exactly that folder and runs
    // nothing, as sync does before it copies a file into a folder.
    void quotedPathsStayPaths()
    {
        QFETCH(QString, shell);
        tb::test::SshdServer server;
        const auto session = connectWithShell(server, shell);
        if (!session)
            return;
        const QString marker = m_work.filePath(QFileInfo(shell).fileName() + "-pwned");
        for (const QString& name : hostileNames(marker)) {
            const QString folder = m_work.filePath(QFileInfo(shell).fileName() + "/" + name);
            const std::string command =
                "mkdir -p -- " + tb::launch::shellQuote(folder.toStdString());
            const auto ran = session->run(command);
            QVERIFY2(ran.ok(), ran.ok() ? "" : ran.error().toString().c_str());
            QVERIFY2(ran->exitStatus == 0,
                qPrintable(name + ": " + QString::fromStdString(ran->errorOutput)));
            QVERIFY2(QFileInfo(folder).isDir(), qPrintable("no folder " + folder));
            QVERIFY2(!QFile::exists(marker), qPrintable(name + " ran a command under " + shell));
        }
    }

    void outputAndStatusAreTheCommands_data() { quotedPathsStayPaths_data(); }

    // The command's own stdout, stderr and exit status come back, whatever
    // the shell that started it; a command that reads stdin reads nothing
    // (the script is not there to be read).
    void outputAndStatusAreTheCommands()
    {
        QFETCH(QString, shell);
        tb::test::SshdServer server;
        const auto session = connectWithShell(server, shell);
        if (!session)
            return;
        const auto ran = session->run("printf 'out\\n'; printf 'err\\n' >&2; cat; exit 3");
        QVERIFY2(ran.ok(), ran.ok() ? "" : ran.error().toString().c_str());
        QCOMPARE(QString::fromStdString(ran->output), QStringLiteral("out\n"));
        QCOMPARE(QString::fromStdString(ran->errorOutput), QStringLiteral("err\n"));
        QCOMPARE(ran->exitStatus, 3);
    }

    void inputReachesTheCommandWhole_data() { quotedPathsStayPaths_data(); }

    // runWithInput, --sync's upload: every byte after the script reaches the
    // command and none is run by a shell (the input starts with a command
    // line and is larger than the channel's window, so a shell that read
    // ahead would eat or run part of it); a command that fails before it
    // reads is its exit status and stderr, not a hang on a full window.
    void inputReachesTheCommandWhole()
    {
        QFETCH(QString, shell);
        tb::test::SshdServer server;
        const auto session = connectWithShell(server, shell);
        if (!session)
            return;
        const QString marker = m_work.filePath(QFileInfo(shell).fileName() + "-ran");
        QByteArray input = "touch " + marker.toUtf8() + "; exit 7\n";
        while (input.size() < (6 << 20))
            input += QByteArray::number(input.size()) + ' ';
        const QString target = m_work.filePath(QFileInfo(shell).fileName() + " a'b.bin");
        const auto feed = [&input](qsizetype& at) {
            return [&input, &at](char* buffer, std::size_t capacity) {
                const auto n = std::min<qsizetype>(qsizetype(capacity), input.size() - at);
                std::memcpy(buffer, input.constData() + at, std::size_t(n));
                at += n;
                return std::size_t(n);
            };
        };
        qsizetype sent = 0;
        const auto ran = session->runWithInput(
            "umask 077 && exec cat > " + tb::launch::shellQuote(target.toStdString()), feed(sent));
        QVERIFY2(ran.ok(), ran.ok() ? "" : ran.error().toString().c_str());
        QCOMPARE(ran->exitStatus, 0);
        QFile copy(target);
        QVERIFY(copy.open(QIODevice::ReadOnly));
        QVERIFY2(copy.readAll() == input, "the copy differs from the input");
        QCOMPARE(copy.permissions() & (QFileDevice::ReadGroup | QFileDevice::ReadOther),
            QFileDevice::Permissions{});
        QVERIFY2(!QFile::exists(marker), qPrintable("the input ran as a command under " + shell));

        qsizetype refusedAt = 0;
        const auto refused = session->runWithInput(
            "exec cat > " + m_work.filePath("no/such/folder").toStdString(), feed(refusedAt));
        QVERIFY2(refused.ok(), refused.ok() ? "" : refused.error().toString().c_str());
        QVERIFY(refused->exitStatus != 0);
        QVERIFY2(QString::fromStdString(refused->errorOutput).contains(QStringLiteral("no/such")),
            refused->errorOutput.c_str());
    }

    void exportsReachTheCommandOnly_data() { quotedPathsStayPaths_data(); }

    // What the launcher sends a node as a variable (the run secret) reaches
    // the command's environment whatever the login shell, and no command
    // line on the host: neither the login shell's nor the POSIX shell's nor
    // the command's. A name no shell takes is refused, naming it.
    void exportsReachTheCommandOnly()
    {
        QFETCH(QString, shell);
        tb::test::SshdServer server;
        const auto session = connectWithShell(server, shell);
        if (!session)
            return;
        const std::string value = "0123abcd'\"$(touch x)";
        const auto ran = session->run("printf '%s' \"$TB_EXPORTED\"; for p in /proc/[0-9]*; do cat "
                                      "\"$p/cmdline\" 2>/dev/null; done >&2",
            0, {{"TB_EXPORTED", value}});
        QVERIFY2(ran.ok(), ran.ok() ? "" : ran.error().toString().c_str());
        QCOMPARE(ran->output, value);
        QVERIFY2(!ran->errorOutput.empty(), "no command line was read");
        QVERIFY2(ran->errorOutput.find("0123abcd") == std::string::npos,
            "the exported value is in a command line on the host");
        for (const char* bad : {"1X", "A-B", "A B", ""}) {
            const auto refused = session->run("true", 0, {{bad, "v"}});
            QVERIFY2(!refused.ok(), bad);
            QVERIFY2(refused.error().message.find("refusing to export '" + std::string(bad) + "'")
                    != std::string::npos,
                refused.error().message.c_str());
        }
        const auto control = session->run("true", 0, {{"TB_EXPORTED", "a\nb"}});
        QVERIFY(!control.ok());
        QVERIFY2(control.error().message.find("control character") != std::string::npos,
            control.error().message.c_str());
        QVERIFY2(control.error().message.find("a\nb") == std::string::npos, "the value was shown");
    }
};

QTEST_GUILESS_MAIN(TestLoginShells)
#include "test_login_shells.moc"
