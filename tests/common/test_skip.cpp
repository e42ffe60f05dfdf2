// TB_SKIP (tests/support/skip.h): a plain skip outside CI, a failure under
// CI=true unless tests/allowed_skips.txt lists it, and ctest's pattern for a
// suite that only skipped matches exactly the first and the allowed case.
// The suite runs its own `probe` function in a child process. No test
// source skips any other way.
#include "../support/qt_test_paths.h"
#include "../support/skip.h"

#include <QCoreApplication>
#include <QDirIterator>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

class TestSkip : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // Only in the child (TB_SKIP_PROBE set); a pass in the parent's run.
    void probe()
    {
        if (qEnvironmentVariableIsSet("TB_SKIP_PROBE"))
            TB_SKIP(QStringLiteral("the probe's prerequisite is missing"));
    }

    void skipUnderAndOutsideCi_data()
    {
        QTest::addColumn<QString>("ci");
        QTest::addColumn<QString>("listed");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("says");
        QTest::addColumn<bool>("suiteSkipped");
        QTest::addRow("no CI: a skip") << ""
                                       << "" << 0 << "SKIP   : TestSkip::probe()" << true;
        QTest::addRow("CI=false: a skip") << "false"
                                          << "" << 0 << "SKIP   : TestSkip::probe()" << true;
        QTest::addRow("CI, not listed: fails") << "true"
                                               << "test_skip other why\n"
                                               << 1 << "does not list it" << false;
        QTest::addRow("CI, listed without a reason: fails") << "true"
                                                            << "test_skip probe\n"
                                                            << 1 << "does not list it" << false;
        QTest::addRow("CI, listed: a skip")
            << "true"
            << "# suite function reason\ntest_skip probe the probe needs nothing real\n"
            << 0 << "SKIP   : TestSkip::probe()" << true;
    }

    void skipUnderAndOutsideCi()
    {
        QFETCH(QString, ci);
        QFETCH(QString, listed);
        QFETCH(int, exitCode);
        QFETCH(QString, says);
        QFETCH(bool, suiteSkipped);
        const QString list = m_dir.filePath(QStringLiteral("allowed_skips.txt"));
        QFile file(list);
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(listed.toUtf8());
        file.close();
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.remove(QStringLiteral("CI"));
        if (!ci.isEmpty())
            environment.insert(QStringLiteral("CI"), ci);
        environment.insert(QStringLiteral("TB_SKIP_PROBE"), QStringLiteral("1"));
        environment.insert(QStringLiteral("TB_ALLOWED_SKIPS"), list);
        QProcess child;
        child.setProcessEnvironment(environment);
        child.setProcessChannelMode(QProcess::MergedChannels);
        child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("probe")});
        QVERIFY(child.waitForFinished(60000));
        const QString output = QString::fromUtf8(child.readAll());
        QCOMPARE(child.exitCode(), exitCode);
        QVERIFY2(output.contains(says), qPrintable(output));
        const QRegularExpression skippedSuite(QStringLiteral(TB_SKIPPED_SUITE_REGEX));
        QVERIFY(skippedSuite.isValid());
        QCOMPARE(skippedSuite.match(output).hasMatch(), suiteSkipped);
    }

    // A raw QSKIP would pass CI unseen: every skip goes through TB_SKIP.
    void noTestSkipsAroundTheHelper()
    {
        const QString helper = tb::test::qSourcePath("tests/support/skip.h");
        const QByteArray rawSkip =
            QByteArray("QSKIP") + "("; // not spelled whole, or this file matches
        QStringList raw;
        QDirIterator sources(tb::test::qSourcePath("tests"), {"*.cpp", "*.h"}, QDir::Files,
            QDirIterator::Subdirectories);
        while (sources.hasNext()) {
            const QString path = sources.next();
            QFile file(path);
            QVERIFY(file.open(QIODevice::ReadOnly));
            if (path != helper && file.readAll().contains(rawSkip))
                raw << path;
        }
        QVERIFY2(raw.isEmpty(), qPrintable("QSKIP instead of TB_SKIP in " + raw.join(", ")));
    }

private:
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestSkip)
#include "test_skip.moc"
