// What the suites that run the built `tunebench-cli plan` share: a run of it
// with the repository's presets, and no calibration file or CPU cache of
// the user's (both kept in a scratch folder).
#pragma once

#include "../support/qt_test_paths.h"

#include <QtTest>

namespace tb::test {

class PlanCliFixture : public QObject {
protected:
    struct Run {
        int exitCode = -1;
        QString out;
        QString err;
    };

    Run plan(const QStringList& args)
    {
        QProcess process;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("TUNEBENCH_PRESETS_DIR", tb::test::qSourcePath("presets"));
        // No calibration file of the user's, and this machine's CPU figures kept apart.
        env.insert("TUNEBENCH_CALIBRATION", m_scratch.filePath("calibration.json"));
        env.insert("XDG_CACHE_HOME", m_scratch.path());
        process.setProcessEnvironment(env);
        process.start(QString::fromUtf8(tb::test::cliProgram()), QStringList{"plan"} + args);
        if (!process.waitForFinished(60000))
            return {};
        return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -2,
            QString::fromUtf8(process.readAllStandardOutput()),
            QString::fromUtf8(process.readAllStandardError())};
    }

    QTemporaryDir m_scratch;
};

} // namespace tb::test
