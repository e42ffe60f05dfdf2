#pragma once

// The data the tests read, all of it in the repository (sourcePath, from
// test_paths.h):
//   the demo model the recipes name, shipped with them (MIT);
//   tests/data/datasets: TinyStories excerpts (CDLA-Sharing-1.0) and
//   synthetic records written for the project;
//   the npm packages of packaging/node-reference.txt, which
//   `packaging/setup.sh test` installs before the tests run.
// sharedDataPath (../shared/data) is only for the data we may not
// redistribute (Alpaca, SAMSum), read in place.
#include <string>
#include <string_view>

#include "test_paths.h"

namespace tb::test {

inline std::string demoModelDir()
{
    return sourcePath("resources/demo/stories260K");
}

inline std::string testDatasetsDir()
{
    return sourcePath("tests/data/datasets");
}

inline std::string testDatasetsPath(std::string_view relative)
{
    return pathUnder(testDatasetsDir().c_str(), relative);
}

inline std::string nodeReferenceDir()
{
    return sourcePath(".venv/node");
}

} // namespace tb::test
