#pragma once

#include "../support/json_line_server.h"
#include "../support/qt_test_paths.h"
#include "distributed_runs.h"

#include <nlohmann/json.hpp>

#include <QJsonArray>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>

// Exports made by the real tunebench-cli and handed to the tools that run
// them (torchrun, accelerate, Azure ML's SDK, Slurm), for the suites that
// check an export works where users paste it.
namespace tb::testutil::exports {

using distributed::kCli;
// The Python environment of the reference tests: torch (torchrun),
// accelerate and azure-ai-ml (packaging/python-reference.txt).
const QString kVenvBin = QString::fromStdString(tb::test::torchVenvPath("bin"));
const QString kPython = kVenvBin + "/python";
const QString kLoader = tb::test::qSourcePath("tests/launch/load_exports.py");

// The environment a user's shell gives the exported command: the tools'
// folder first on PATH, no rank variables of an enclosing launcher.
inline QProcessEnvironment toolEnvironment()
{
    QProcessEnvironment environment = plainEnvironment();
    environment.insert("PATH", kVenvBin + ":" + environment.value("PATH"));
    environment.insert("TUNEBENCH_PRESETS_DIR", tb::test::qSourcePath("presets"));
    return environment;
}

inline Ended run(const QString& program, const QStringList& arguments, int timeoutMs = 60000,
    const QProcessEnvironment& environment = toolEnvironment())
{
    Command command;
    command.arguments = arguments;
    command.environment = environment;
    return runTogether(program, {command}, timeoutMs).front();
}

// `tunebench-cli export FORMAT ARGS...`.
inline Ended exportJob(const QString& format, const QStringList& arguments)
{
    return run(kCli, QStringList{"export", format} + arguments);
}

// load_exports.py serving a whole suite, so azure-ai-ml and accelerate are
// imported once; a request's deadline covers that import on a loaded machine.
inline std::unique_ptr<test::JsonLineServer>& loaderServer()
{
    static std::unique_ptr<test::JsonLineServer> server;
    return server;
}

// Ends the loaders' server (the suite's cleanupTestCase).
inline void stopLoaderServer()
{
    loaderServer().reset();
}

// What the tool's own loader read from an exported file; `problem` gets the
// loader's message when it refused the file.
inline nlohmann::json loadWithTool(const QString& tool, const QString& file, QString* problem)
{
    auto& server = loaderServer();
    if (!server || !server->running())
        server = std::make_unique<test::JsonLineServer>(
            kPython, QStringList{kLoader, "serve"}, toolEnvironment());
    const auto asked =
        server->ask(QJsonArray{tool, file}, 300000, "load_exports.py " + tool + " " + file);
    if (!asked.problem.isEmpty()) {
        *problem = asked.problem;
        return {};
    }
    const QJsonValue refused = asked.answer.value("problem");
    if (refused.isString()) {
        *problem = refused.toString();
        return {};
    }
    // Parsed again from the line: nlohmann keeps integers integers.
    return nlohmann::json::parse(asked.line.toStdString()).at("loaded");
}

// The distributed suites' LoRA run config (tests/train/distributed_runs.h:
// no dropout, the same global batch on any number of ranks) for two ranks,
// with its run folder in the config itself: an exported command carries no
// --output.
inline std::string writeLoraConfig(
    const QTemporaryDir& dir, const QString& name, const QString& runDir)
{
    distributed::RunSpec spec;
    spec.method = "lora";
    spec.maxSteps = 3;
    const std::string path = distributed::writeConfig(dir, name, spec);
    std::ofstream(path, std::ios::app)
        << "name: " << name.toStdString() << "\noutput: {dir: " << runDir.toStdString() << "}\n";
    return path;
}

// A LoRA run config exported by `tunebench-cli export FORMAT` as `file` in
// `dir`: one node of two ranks (processes on the CPU) on a free port,
// running this build's tunebench-cli.
struct ExportedRun {
    QString file;
    QString runDir; // where the config sends the run
    QString out; // the export's stdout (accelerate: the launch command)
    QString problem; // empty: exported
};

inline ExportedRun exportLoraRun(const QTemporaryDir& dir, const QString& format,
    const QString& file, const QStringList& extra = {})
{
    ExportedRun exported;
    exported.file = dir.filePath(file);
    exported.runDir = dir.filePath(format + "-run");
    const std::string config = writeLoraConfig(dir, format + "-config", exported.runDir);
    const auto port = tb::launch::pickFreePort("127.0.0.1");
    if (!port) {
        exported.problem = QString::fromStdString(port.error().message);
        return exported;
    }
    const Ended made = exportJob(format,
        QStringList{"--config", QString::fromStdString(config), "--nodes", "1", "--gpus-per-node",
            "2", "--master-port", QString::number(*port), "--program", kCli, "--out", exported.file}
            + extra);
    exported.out = made.out.trimmed();
    if (!made.succeeded())
        exported.problem = describe({made});
    return exported;
}

// The same LoRA config through our own launcher on two ranks: the run the
// exports must reproduce. Its run folder, or empty with `problem` set.
inline QString launchReference(const QTemporaryDir& dir, QString* problem)
{
    const QString runDir = dir.filePath("reference-run");
    const std::string config = writeLoraConfig(dir, "reference", runDir);
    const Ended launched =
        run(kCli, {"launch", QString::fromStdString(config), "--nproc", "2"}, 300000);
    if (launched.succeeded())
        return runDir;
    *problem = describe({launched});
    return {};
}

// Why the adapter of `runDir` is not the reference's within the
// distributed suites' LoRA tolerance, or empty; the difference is printed.
inline QString differsFromReference(const QString& runDir, const QString& referenceDir)
{
    QString problem;
    const Tensors tensors =
        readTensors(distributed::exportOf(runDir.toStdString(), "lora"), &problem);
    const Tensors reference =
        readTensors(distributed::exportOf(referenceDir.toStdString(), "lora"), &problem);
    if (!problem.isEmpty())
        return problem;
    const double diff = maxAbsDiff(tensors, reference, &problem);
    qInfo("largest |adapter - launcher's adapter|: %.3g", diff);
    if (!problem.isEmpty())
        return problem;
    if (!(diff <= distributed::kLoraTolerance))
        return QString("adapters differ by %1, more than %2")
            .arg(diff)
            .arg(distributed::kLoraTolerance);
    return {};
}

} // namespace tb::testutil::exports
