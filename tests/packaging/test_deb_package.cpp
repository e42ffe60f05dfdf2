#include "../support/cli_outcome.h"
#include "../support/skip.h"
#include "../support/test_paths.h"

#include <QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>

#include <unistd.h>

// The Debian package that `cpack -G DEB` made in the build folder, installed
// with apt into a clean Debian 12 root (debootstrap --variant=minbase, so
// nothing of this machine is there: apt must bring every dependency the
// package declares), where the installed tunebench-cli plans, the trainer
// loads its LibTorch through its rpath, and the GUI reports its version.
namespace {

using Outcome = tb::test::CliOutcome;

Outcome run(const QString& program, const QStringList& arguments, int timeoutMs,
    const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment())
{
    tb::test::ProgramSetup setup;
    setup.environment = environment;
    return tb::test::runProgram(program, arguments, timeoutMs, setup);
}

QString describe(const QString& what, const Outcome& outcome)
{
    return what + " failed:\n" + outcome.out.right(3000) + "\n" + outcome.err.right(3000);
}

// A chroot's environment: no variable of the build machine leaks in.
QProcessEnvironment cleanEnvironment()
{
    QProcessEnvironment environment;
    environment.insert("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    environment.insert("DEBIAN_FRONTEND", "noninteractive");
    environment.insert("LC_ALL", "C.UTF-8");
    return environment;
}

} // namespace

class TestDebPackage : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_package;

    Outcome inRoot(const QStringList& command, int timeoutMs = 120000)
    {
        return run(
            "chroot", QStringList{m_dir.filePath("root")} + command, timeoutMs, cleanEnvironment());
    }

private slots:
    void initTestCase()
    {
        if (::geteuid() != 0)
            TB_SKIP(QStringLiteral(
                "debootstrap and chroot need root; run this suite as root (CI does)"));
        const QStringList packages =
            QDir(tb::test::buildDir()).entryList({"tunebench_*.deb"}, QDir::Files, QDir::Time);
        QVERIFY2(!packages.isEmpty(),
            qPrintable(QStringLiteral("no tunebench_*.deb in %1: run 'cpack -G DEB' there "
                                      "(packaging/setup.sh test does, before the tests)")
                           .arg(tb::test::buildDir())));
        m_package = QDir(tb::test::buildDir()).filePath(packages.front());
        QVERIFY(m_dir.isValid());
        qInfo("package: %s, %.1f MiB", qPrintable(m_package),
            double(QFileInfo(m_package).size()) / (1 << 20));
    }

    void installsIntoCleanDebianAndRuns()
    {
        QElapsedTimer clock;
        clock.start();
        const QString root = m_dir.filePath("root");
        const QString mirror =
            qEnvironmentVariable("TB_DEBIAN_MIRROR", "http://deb.debian.org/debian");
        const Outcome bootstrapped = run("debootstrap",
            {"--variant=minbase", "bookworm", root, mirror}, 900000, cleanEnvironment());
        QVERIFY2(bootstrapped.exitCode == 0, qPrintable(describe("debootstrap", bootstrapped)));
        qInfo("debootstrap: %.0f s", double(clock.restart()) / 1000);

        // A running Debian has /proc: the CLI finds its presets and the
        // trainer beside itself through /proc/self/exe.
        QVERIFY(run("mount", {"-t", "proc", "proc", root + "/proc"}, 30000).exitCode == 0);
        const auto unmount = qScopeGuard([&] { run("umount", {root + "/proc"}, 30000); });
        QVERIFY(QFile::copy(m_package, root + "/tmp/tunebench.deb"));
        const Outcome updated = inRoot({"apt-get", "update", "-q"});
        QVERIFY2(updated.exitCode == 0, qPrintable(describe("apt-get update", updated)));
        const Outcome installed = inRoot(
            {"apt-get", "install", "-y", "-q", "--no-install-recommends", "/tmp/tunebench.deb"},
            900000);
        QVERIFY2(installed.exitCode == 0, qPrintable(describe("apt-get install", installed)));
        qInfo("apt-get install with its dependencies: %.0f s", double(clock.restart()) / 1000);

        // The CLI finds the installed presets and plans.
        const Outcome planned = inRoot({"tunebench-cli", "plan"});
        QVERIFY2(planned.exitCode == 0, qPrintable(describe("tunebench-cli plan", planned)));
        QVERIFY2(planned.out.contains("GiB"), qPrintable(planned.out));
        // The trainer starts: every library it links, LibTorch's included,
        // is found (the dynamic loader stops before main otherwise).
        const Outcome trainer = inRoot({"tunebench-cli", "train", "--help"});
        QVERIFY2(
            trainer.exitCode == 0, qPrintable(describe("tunebench-cli train --help", trainer)));
        QVERIFY2(trainer.out.contains("--resume"), qPrintable(trainer.out));
        // An installed recipe trains as it stands: the demo model and data
        // it names are installed beside it.
        const Outcome recipe =
            inRoot({"tunebench-cli", "train", "/usr/share/tunebench/presets/recipes/lora.yaml",
                       "--max-steps", "2", "--threads", "1", "--output", "/tmp/recipe-run"},
                300000);
        QVERIFY2(
            recipe.exitCode == 0, qPrintable(describe("tunebench-cli train lora.yaml", recipe)));
        QVERIFY(QFileInfo::exists(root + "/tmp/recipe-run/events.jsonl"));
        // The GUI loads Qt and its platform plugin and answers --version.
        const Outcome gui = inRoot({"env", "QT_QPA_PLATFORM=offscreen", "tunebench", "--version"});
        QVERIFY2(gui.exitCode == 0, qPrintable(describe("tunebench --version", gui)));
        QCOMPARE(gui.out.trimmed(), QStringLiteral("Tunebench " TB_VERSION));
    }
};

QTEST_GUILESS_MAIN(TestDebPackage)
#include "test_deb_package.moc"
