#pragma once

// The paths of test_paths.h and test_data.h as QString, for the suites that
// hand them to Qt (QProcess, QFile, QDir, screenshots).
#include <QString>

#include "test_data.h"
#include "test_paths.h"

namespace tb::test {

inline QString qSourcePath(std::string_view relative)
{
    return QString::fromStdString(sourcePath(relative));
}

inline QString qBuildPath(std::string_view relative)
{
    return QString::fromStdString(buildPath(relative));
}

inline QString qDemoModelDir()
{
    return QString::fromStdString(demoModelDir());
}

inline QString qTestDatasetsPath(std::string_view relative)
{
    return QString::fromStdString(testDatasetsPath(relative));
}

} // namespace tb::test
