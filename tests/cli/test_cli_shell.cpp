#include "../support/cli_outcome.h"
#include "../support/test_paths.h"

#include <QProcess>
#include <QTest>

// The shell of tunebench-cli as a user meets it: the real binary, run as a
// process. Subcommand behaviour is tested with each feature's own suite.
namespace {

using Outcome = tb::test::CliOutcome;

Outcome runCli(const QStringList& arguments, int timeoutMs = 30000)
{
    return tb::test::runProgram(QString::fromUtf8(tb::test::cliProgram()), arguments, timeoutMs);
}

} // namespace

class TestCliShell : public QObject {
    Q_OBJECT

private slots:
    void everySubcommandHasHelp_data()
    {
        QTest::addColumn<QString>("command");
        for (const char* name : {"plan", "train", "launch", "monitor", "runs", "compare", "scaling",
                 "export", "tokenize", "eval", "generate"})
            QTest::addRow("%s", name) << QString::fromLatin1(name);
    }
    void everySubcommandHasHelp()
    {
        QFETCH(QString, command);
        const Outcome outcome = runCli({command, QStringLiteral("--help")});
        const QString text = outcome.out + outcome.err;
        QVERIFY2(
            text.contains(QStringLiteral("usage: tunebench-cli ") + command), qPrintable(text));
        // Built: help on stdout, status 0. Not built yet, or not in this
        // build (no trainer): says so, status 2.
        if (text.contains(QStringLiteral("Not built yet"))
            || text.contains(QStringLiteral("Not in this build")))
            QCOMPARE(outcome.exitCode, 2);
        else
            QCOMPARE(outcome.exitCode, 0);
    }

    void listsCommandsWithHelp()
    {
        const Outcome outcome = runCli({QStringLiteral("--help")});
        QCOMPARE(outcome.exitCode, 0);
        for (const char* name : {"plan", "train", "launch", "monitor", "runs", "compare", "scaling",
                 "export", "tokenize", "eval", "generate"})
            QVERIFY2(outcome.out.contains(QLatin1String(name)), name);
    }

    void usageErrorsExitTwo_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("mentions");
        QTest::addRow("no command") << QStringList{} << "usage: tunebench-cli";
        QTest::addRow("unknown command") << QStringList{"plna"} << "unknown command 'plna'";
    }
    void usageErrorsExitTwo()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, mentions);
        const Outcome outcome = runCli(arguments);
        QCOMPARE(outcome.exitCode, 2);
        QVERIFY2(outcome.err.contains(mentions), qPrintable(outcome.err));
    }

    void versionNamesLibraries()
    {
        const Outcome outcome = runCli({QStringLiteral("--version")});
        QCOMPARE(outcome.exitCode, 0);
        QVERIFY(outcome.out.startsWith(QStringLiteral("tunebench-cli ")));
        QVERIFY(outcome.out.contains(QStringLiteral("yaml-cpp")));
    }
};

QTEST_GUILESS_MAIN(TestCliShell)
#include "test_cli_shell.moc"
