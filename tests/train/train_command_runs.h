#pragma once

// Running `tunebench-cli train` as a user does, for the suites that test it
// (test_train_command, test_checkpoint_resume): the CLI, the demo model and
// data, the run's events, a config writer and a wait on an event.
#include "../support/cli_outcome.h"
#include "../support/qt_test_paths.h"
#include "../support/write_or_stop.h"
#include "common/atomic_file.h"
#include "run_events.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"

#include <nlohmann/json.hpp>

#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tb::testutil::train_command {

namespace fs = std::filesystem;
using nlohmann::json;

inline const QString kCli = tb::test::qBuildPath("app/cli/tunebench-cli");
inline const std::string kModel = tb::test::demoModelDir();
inline const std::string kDemo = tb::test::sourcePath("resources/demo/tiny_instructions.jsonl");

using Run = tb::test::CliOutcome;

inline Run cli(const QStringList& arguments, int timeoutMs = 240000,
    const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment())
{
    tb::test::ProgramSetup setup;
    setup.environment = environment;
    return tb::test::runProgram(kCli, arguments, timeoutMs, setup);
}

inline std::vector<json> events(const std::string& runDir)
{
    return tb::testutil::readEventFile(runDir + "/events.jsonl");
}

inline std::vector<json> ofType(const std::vector<json>& all, const std::string& type)
{
    return tb::testutil::eventsOfType(all, type);
}

inline std::string bytesOf(const std::string& path)
{
    const auto content = tb::common::readFile(path);
    return content ? *content : std::string();
}

inline int countFolders(const std::string& dir)
{
    int count = 0;
    for (const auto& entry : fs::directory_iterator(dir))
        count += entry.is_directory() ? 1 : 0;
    return count;
}

// A LoRA or full run config on stories260K and the demo instructions.
inline std::string writeConfig(
    const QTemporaryDir& dir, const std::string& name, const std::string& body)
{
    const std::string path = dir.filePath(QString::fromStdString(name + ".yaml")).toStdString();
    const std::string text = "model: " + kModel + "\ndata:\n  train: " + kDemo
        + "\n  sequence_length: 128\n  validation_split: 0.1\n" + body;
    tb::test::writeOrStop(path, text);
    return path;
}

// Waits until the run's events hold an event matching `test`.
inline bool waitForEvent(const std::string& runDir, const std::function<bool(const json&)>& test,
    QProcess& process, int timeoutMs = 120000)
{
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < timeoutMs && process.state() != QProcess::NotRunning) {
        for (const json& event : events(runDir)) {
            if (test(event))
                return true;
        }
        QTest::qWait(10);
    }
    return false;
}

// Rewrites a checkpoint's rank file as a GPU run writes it: rng.dropout holds
// a CUDA generator's 16-byte state (seed and offset), and the metadata names
// the device, or says nothing as in files from before it was recorded.
inline QString makeRankFileLookCuda(const std::string& path, const QString& deviceMetadata)
{
    namespace st = tb::safetensors;
    auto file = st::SafetensorsFile::open(path);
    if (!file)
        return QString::fromStdString(file.error().toString());
    std::vector<std::vector<std::byte>> contents;
    std::vector<st::TensorToWrite> tensors;
    const std::vector<std::byte> cudaState(16, std::byte{7});
    for (const st::TensorInfo& info : file->tensors()) {
        if (info.name == "rng.dropout") {
            tensors.push_back({info.name, st::DType::U8, {16}, cudaState});
            continue;
        }
        auto bytes = file->readBytes(info.name);
        if (!bytes)
            return QString::fromStdString(bytes.error().toString());
        contents.push_back(std::move(bytes).value());
        tensors.push_back({info.name, info.dtype, info.shape, contents.back()});
    }
    std::map<std::string, std::string> metadata = file->metadata();
    metadata.erase("rng.dropout.device");
    if (!deviceMetadata.isEmpty())
        metadata["rng.dropout.device"] = deviceMetadata.toStdString();
    const auto written = st::writeSafetensors(path, tensors, metadata);
    return written ? QString() : QString::fromStdString(written.error().toString());
}

} // namespace tb::testutil::train_command
