// What the suites that run the built `tunebench-cli plan` share: a run of it
// with the repository's presets, and no calibration file or CPU cache of
// the user's (both kept in a scratch folder).
#pragma once

#include "../support/cli_outcome.h"
#include "../support/qt_test_paths.h"

#include <QtTest>

namespace tb::test {

class PlanCliFixture : public QObject {
protected:
    using Run = CliOutcome;

    Run plan(const QStringList& args)
    {
        ProgramSetup setup;
        setup.environment.insert("TUNEBENCH_PRESETS_DIR", tb::test::qSourcePath("presets"));
        // No calibration file of the user's, and this machine's CPU figures kept apart.
        setup.environment.insert("TUNEBENCH_CALIBRATION", m_scratch.filePath("calibration.json"));
        setup.environment.insert("XDG_CACHE_HOME", m_scratch.path());
        return runProgram(
            QString::fromUtf8(cliProgram()), QStringList{"plan"} + args, 60000, setup);
    }

    QTemporaryDir m_scratch;
};

} // namespace tb::test
