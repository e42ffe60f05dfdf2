#pragma once

// Where a test finds this clone's files, this build's folder and the
// programs it starts. The values live in one generated translation unit
// (test_paths.cpp.in, library tunebench_test_paths), not in -D flags:
// ccache's base_dir makes path arguments relative but hashes the values of
// defines as written, so a define holding the clone's absolute path made
// every test object miss the cache in a clone at another path (CI's).
// Plain C++ for the suites and benchmarks without Qt; qt_test_paths.h gives
// the joined paths as QString.
#include <string>
#include <string_view>

namespace tb::test {

// Absolute paths, fixed when CMake generates the build; a program this
// build does not make (no GUI, no trainer) is an empty string.
const char* sourceDir(); // the repository
const char* buildDir(); // the build folder
const char* sharedDataDir(); // the data we may not redistribute (test_data.h)
const char* torchVenvDir(); // the virtual environment LibTorch came from
const char* referencePython(); // Python with the Hugging Face stack
const char* cliProgram(); // tunebench-cli
const char* guiProgram(); // tunebench
const char* bareWindowProgram(); // bench_gui_bare_window
const char* fakeTrainerProgram(); // tb_fake_trainer
const char* distWorkerProgram(); // dist_worker

// <dir>/<relative>, spelt as the tests spelt it before ("a/b", "a/").
inline std::string pathUnder(const char* dir, std::string_view relative)
{
    std::string path(dir);
    path += '/';
    path += relative;
    return path;
}

inline std::string sourcePath(std::string_view relative)
{
    return pathUnder(sourceDir(), relative);
}

inline std::string buildPath(std::string_view relative)
{
    return pathUnder(buildDir(), relative);
}

inline std::string sharedDataPath(std::string_view relative)
{
    return pathUnder(sharedDataDir(), relative);
}

inline std::string torchVenvPath(std::string_view relative)
{
    return pathUnder(torchVenvDir(), relative);
}

} // namespace tb::test
