#pragma once

#include "../support/model_variants.h"
#include "../support/qt_test_paths.h"
#include "../support/write_or_stop.h"
#include "common/atomic_file.h"
#include "exported_tensors.h"
#include "launch/free_port.h"
#include "rank_processes.h"
#include "run_events.h"
#include "safetensors/safetensors_file.h"

#include <nlohmann/json.hpp>

#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

// tunebench-cli train as data-parallel ranks (real processes, Gloo on
// loopback): every sharding strategy ends where one process with the same
// global batch ends, a sharded checkpoint continues at another world size,
// a killed rank is named by the survivors, and a bad rank environment is
// refused. Every rank runs one compute thread (2-core CI machine).
//
// Equality needs the same global batch (DistributedSampler: one process with
// micro_batch m x N sees what N ranks with micro_batch m see), no LoRA
// dropout (each rank draws its own masks) and a constant learning rate where
// a run is continued with another max_steps (the schedule depends on it).
namespace tb::testutil::distributed {

namespace fs = std::filesystem;

using nlohmann::json;
using tb::testutil::allSucceeded;
using tb::testutil::Command;
using tb::testutil::describe;
using tb::testutil::Ended;
using tb::testutil::maxAbsDiff;
using tb::testutil::readTensors;
using tb::testutil::Tensors;

const QString kCli = tb::test::qBuildPath("app/cli/tunebench-cli");
const std::string kModel = tb::test::demoModelDir();
const std::string kDemo = tb::test::sourcePath("resources/demo/tiny_instructions.jsonl");

// Every run: 4 optimizer steps of 2 micro-batches, 8 rows per step in all.
constexpr int kSteps = 4;
constexpr int kGradAccum = 2;
constexpr int kGlobalBatch = 8;

// Largest |distributed - one process| over every exported value; see
// kAdamEpsilon for why it is not rounding-sized. Measured on the 2-core
// build machine (2026-11-21, one thread per rank): full 1.45e-5 to 1.54e-5,
// LoRA 1.79e-5 to 2.38e-5 over every row. A wrong gradient moves weights by
// about the learning rate (3e-3).
constexpr double kFullTolerance = 1e-4;
constexpr double kLoraTolerance = 1e-4;
// Largest relative difference of a step's loss or gradient norm (rank 0's
// step events hold the job's figures). Adam's update is invariant to the
// gradient's scale, so a normalisation bug (gradients averaged twice, summed
// over ranks without the global token count) leaves the weights alone but
// not the gradient norm. Measured: 8.9e-7 to 2.6e-6.
constexpr double kStepTolerance = 2e-5;
// Continued at another world size against 2 ranks without a stop (the same
// sums, fewer steps for rounding to grow in). Measured: 1.2e-7 (4 ranks),
// 2.4e-7 (1 process).
constexpr double kResumeTolerance = 1e-5;
// The adapter is written in the model's dtype (bf16): one bf16 step at a
// magnitude of 1 to 2 is 0.0078. The loss and gradient norm of every step
// are the sharper check (a gradient scaled or missing a rank moves them).
constexpr double kBf16Tolerance = 0.02;
// Measured 0.0062 to 0.0068 (bf16 matmuls over micro-batches of 2 and 4).
constexpr double kBf16StepTolerance = 0.03;

// AdamW's epsilon in these runs. The first update is lr * g / (|g| + eps):
// with the default 1e-8 a weight whose gradient is ~1e-9 (a nearly dead MLP
// unit: a sum that cancels to rounding noise) moves by +-lr/10 depending on
// that noise alone: one process and 2 ranks end 7.4e-4 apart after the first
// step already (lr 3e-3; 3 of 260K weights differ by more than 1e-4). With 1e-6 such
// gradients move their weights by ~lr * 1e-3; every ordinary gradient
// (mean |g| ~ 2e-2 here) is still normalised as with the default.
const char* const kAdamEpsilon = "1e-6";

inline bool usesLora(const QString& method)
{
    return method == "lora" || method == "qlora";
}

inline double toleranceFor(const QString& method)
{
    return usesLora(method) ? kLoraTolerance : kFullTolerance;
}

inline std::vector<json> events(const std::string& file)
{
    return tb::testutil::readEventFile(file);
}

inline std::vector<json> ofType(const std::vector<json>& all, const std::string& type)
{
    return tb::testutil::eventsOfType(all, type);
}

struct RunSpec {
    std::string model = kModel;
    QString method = "full";
    QString sharding = "ddp";
    int microBatch = kGlobalBatch / kGradAccum;
    int gradAccum = kGradAccum;
    int maxSteps = kSteps;
    int timeoutSeconds = 120;
    QString precision = "fp32";
    bool checkpointing = false;
    QString offload = "none"; // on the CPU only with kCpuOffloadForTests set (withCpuOffload)
    QString exportKind; // output.export; empty: the method's default
    // lora.target_parameters: LoRA on a mixture's experts too (peft's names).
    std::vector<std::string> expertTargets;
};

inline std::string writeConfig(const QTemporaryDir& dir, const QString& name, const RunSpec& spec)
{
    const std::string path = dir.filePath(name + ".yaml").toStdString();
    std::string text = "model: " + spec.model + "\ndata:\n  train: " + kDemo
        + "\n  sequence_length: 128\n  validation_split: 0.1\nprecision: "
        + spec.precision.toStdString() + "\nactivation_checkpointing: "
        + (spec.checkpointing ? "true" : "false") + "\nmethod: " + spec.method.toStdString() + "\n";
    if (usesLora(spec.method)) {
        std::string experts;
        for (const std::string& target : spec.expertTargets)
            experts += (experts.empty() ? ", target_parameters: [" : ", ") + target;
        text += "lora: {rank: 4, alpha: 16, dropout: 0.0" + experts + (experts.empty() ? "" : "]")
            + "}\n";
    }
    text += "training: {max_steps: " + std::to_string(spec.maxSteps) + ", micro_batch: "
        + std::to_string(spec.microBatch) + ", grad_accum: " + std::to_string(spec.gradAccum)
        + ", learning_rate: 3e-3, schedule: constant, adam_epsilon: " + kAdamEpsilon + "}\n"
        + "distributed: {sharding: " + spec.sharding.toStdString()
        + ", offload: " + spec.offload.toStdString()
        + ", timeout_seconds: " + std::to_string(spec.timeoutSeconds) + "}\n";
    if (!spec.exportKind.isEmpty())
        text += "output: {export: " + spec.exportKind.toStdString() + "}\n";
    tb::test::writeOrStop(path, text);
    return path;
}

// What every rank runs after `train CONFIG`.
inline QStringList trainOptions(const std::string& runDir, const QStringList& extra = {})
{
    return QStringList{"--output", QString::fromStdString(runDir), "--threads", "1", "--quiet"}
    + extra;
}

inline Command single(
    const std::string& config, const std::string& runDir, const QStringList& extra = {})
{
    Command command;
    command.arguments =
        QStringList{"train", QString::fromStdString(config)} + trainOptions(runDir, extra);
    return command;
}

// `tunebench-cli launch` on one node, or one launcher per node with a
// common port (a job of `nodes` nodes on this machine).
inline std::vector<Command> launched(const std::string& config, const std::string& runDir,
    int nodes, int nprocPerNode, const QStringList& extra = {})
{
    std::vector<Command> commands;
    int port = 0;
    if (nodes > 1) {
        const auto picked = tb::launch::pickFreePort("127.0.0.1");
        if (!picked)
            return {};
        port = picked.value();
    }
    for (int node = 0; node < nodes; ++node) {
        Command command;
        command.arguments = QStringList{
            "launch", QString::fromStdString(config), "--nproc", QString::number(nprocPerNode)};
        if (nodes > 1)
            command.arguments += QStringList{"--nnodes", QString::number(nodes), "--node-rank",
                QString::number(node), "--master-addr", "127.0.0.1", "--master-port",
                QString::number(port)};
        command.arguments << "--" << trainOptions(runDir, extra);
        commands.push_back(command);
    }
    return commands;
}

// The commands with the trainer's test switch that lets offload run on the
// CPU (train/training_device.h, kCpuOffloadForTests).
inline std::vector<Command> withCpuOffload(std::vector<Command> commands)
{
    for (Command& command : commands)
        command.environment.insert("TUNEBENCH_TEST_CPU_OFFLOAD", "1");
    return commands;
}

// Rank 0's step events: the job's loss and gradient norm per step.
using StepFigures = std::vector<std::pair<double, double>>;

inline StepFigures stepFigures(const std::vector<json>& all)
{
    StepFigures figures;
    for (const json& step : ofType(all, "step"))
        figures.emplace_back(
            step.value("loss", std::nan("")), step.value("grad_norm", std::nan("")));
    return figures;
}

// Largest relative difference of the losses and gradient norms; NaN when
// the step counts differ.
inline double maxRelativeDiff(const StepFigures& a, const StepFigures& b)
{
    if (a.size() != b.size() || a.empty())
        return std::nan("");
    double largest = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        largest = std::max(largest, std::abs(a[i].first - b[i].first) / std::abs(b[i].first));
        largest = std::max(largest, std::abs(a[i].second - b[i].second) / std::abs(b[i].second));
    }
    return largest;
}

struct Reference {
    Tensors tensors;
    StepFigures steps;
};

inline std::string exportOf(const std::string& runDir, const QString& method)
{
    return runDir
        + (usesLora(method) ? "/adapter/adapter_model.safetensors" : "/merged/model.safetensors");
}

inline void copyFolder(const std::string& from, const std::string& to)
{
    fs::copy(from, to, fs::copy_options::recursive);
}

} // namespace tb::testutil::distributed
