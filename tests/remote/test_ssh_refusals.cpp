// What the SSH layer refuses, it says plainly (review L1, L2, L9): the hint
// for an unknown host key checks the key out of band (never ssh-keyscan)
// with every word quoted, an option libssh refuses is named with its value,
// a libssh older than 0.10.6 is refused, and a command holding a control
// character is not sent. Against a real OpenSSH sshd on
// loopback.
#include "sshd_target.h"

#include "launch/text_quote.h"
#include "remote/ssh_session.h"

#include <QtTest>

using tb::remote::SshSession;
using tb::remote::SshTarget;

class TestSshRefusals : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_work.isValid());
        const QString failure = m_server.start();
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }

    // A known-hosts file in a folder a shell would take apart.
    void unknownHostKeyHintChecksOutOfBandAndQuotes()
    {
        const QString folder = m_work.filePath(QStringLiteral("a b$(touch x)"));
        QVERIFY(QDir().mkpath(folder));
        const QString file = folder + QStringLiteral("/known_hosts");
        QFile empty(file);
        QVERIFY(empty.open(QIODevice::WriteOnly));
        empty.close();
        SshTarget target = this->target();
        target.knownHostsFile = file.toStdString();
        const auto session = SshSession::connect(target);
        QVERIFY(!session.ok());
        const QString port = QString::number(m_server.port());
        const QString quotedFile = "'" + file + "'";
        const QString message = QString::fromStdString(session.error().toString());
        for (const QString& part :
            {QStringLiteral("host key SHA256:"), QStringLiteral("is not in ") + file,
                QStringLiteral("the fingerprint the machine's administrator gives you"),
                QStringLiteral("ssh-keygen -F '[127.0.0.1]:%1' -f %2").arg(port, quotedFile),
                QStringLiteral("Only if they match, add the key with: ssh -o UserKnownHostsFile=%1 "
                               "-p %2 127.0.0.1")
                    .arg(quotedFile, port)})
            QVERIFY2(message.contains(part), qPrintable(message + "\nmissing: " + part));
        QVERIFY2(!message.contains(QStringLiteral("ssh-keyscan")), qPrintable(message));
    }

    // libssh 0.10.6 checks host names; before, its refusal was ignored and
    // surfaced as "cannot read ~/.ssh/config: Invalid argument".
    void anOptionLibsshRefusesIsNamed()
    {
        SshTarget target = this->target();
        target.host = "a;b";
        const auto session = SshSession::connect(target);
        QVERIFY(!session.ok());
        const QString message = QString::fromStdString(session.error().message);
        QVERIFY2(message.contains(QStringLiteral("libssh refused the option Host 'a;b'")),
            qPrintable(message));
        QVERIFY2(!message.contains(QStringLiteral("~/.ssh/config")), qPrintable(message));
    }

    // A path with a newline or a NUL (a YAML "\n" or "\0") is refused
    // before anything is sent (review L1): csh ends a command at a newline
    // even inside quotes, and NUL cuts the exec request short.
    void aCommandWithAControlCharacterIsNotSent_data()
    {
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<QString>("shown");
        QTest::newRow("newline") << QByteArray("/runs/a\nb") << "/runs/a\\x0ab";
        QTest::newRow("NUL") << QByteArray("/runs/a\0b", 9) << "/runs/a\\x00b";
        QTest::newRow("escape") << QByteArray("/runs/\x1b[2J") << "/runs/\\x1b[2J";
    }

    void aCommandWithAControlCharacterIsNotSent()
    {
        QFETCH(QByteArray, path);
        QFETCH(QString, shown);
        auto session = SshSession::connect(target());
        QVERIFY2(session.ok(), session.ok() ? "" : session.error().toString().c_str());
        const QString marker = m_work.filePath(QStringLiteral("ran"));
        const std::string command = "touch " + tb::launch::shellQuote(marker.toStdString())
            + "; ls -- " + tb::launch::shellQuote(path.toStdString());
        const auto ran = (*session)->run(command);
        QVERIFY(!ran.ok());
        const QString message = QString::fromStdString(ran.error().toString());
        QVERIFY2(message.contains(QStringLiteral("refusing to run")) && message.contains(shown)
                && message.contains(QStringLiteral("control character")),
            qPrintable(message));
        QVERIFY(!QFile::exists(marker));
        QVERIFY((*session)->run("true").ok()); // the session goes on
    }

    // zsh expands a word starting with '=' (=ls is the path of ls).
    void aWordStartingWithEqualsIsQuoted()
    {
        QCOMPARE(tb::launch::shellQuote("=ls"), std::string("'=ls'"));
        QCOMPARE(tb::launch::shellQuote("a=b"), std::string("a=b"));
        auto session = SshSession::connect(target());
        QVERIFY(session.ok());
        const auto echoed = (*session)->run("printf %s " + tb::launch::shellQuote("=ls"));
        QVERIFY(echoed.ok());
        QCOMPARE(echoed->output, std::string("=ls"));
    }

    void libsshVersions_data()
    {
        QTest::addColumn<QString>("running");
        QTest::addColumn<QString>("expected");
        QTest::newRow("0.9.8") << "0.9.8/openssl/zlib"
                               << "libssh 0.9.8 is too old: Tunebench needs 0.10.6 or newer";
        QTest::newRow("0.10.5") << "0.10.5/openssl"
                                << "libssh 0.10.5 is too old";
        QTest::newRow("0.10.6") << "0.10.6/openssl/zlib"
                                << "";
        QTest::newRow("0.11.1") << "0.11.1/openssl/zlib"
                                << "";
        QTest::newRow("1.0.0") << "1.0.0"
                               << "";
        QTest::newRow("not a version") << "libssh"
                                       << "cannot tell the version of libssh from 'libssh'";
    }

    void libsshVersions()
    {
        QFETCH(QString, running);
        QFETCH(QString, expected);
        const std::string problem = tb::remote::libsshVersionProblem(running.toStdString().c_str());
        if (expected.isEmpty())
            QVERIFY2(problem.empty(), problem.c_str());
        else
            QVERIFY2(QString::fromStdString(problem).startsWith(expected), problem.c_str());
        QVERIFY(!tb::remote::libsshVersionProblem(nullptr).empty());
    }

private:
    SshTarget target() const { return tb::test::loginTarget(m_server); }

    tb::test::SshdServer m_server;
    QTemporaryDir m_work;
};

QTEST_GUILESS_MAIN(TestSshRefusals)
#include "test_ssh_refusals.moc"
