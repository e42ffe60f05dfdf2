#pragma once

// A real run for the suites that follow and stop one: a LoRA fine-tune of
// the demo stories260K on the demo instructions that goes on until it is
// stopped, started as `tunebench-cli train` (the build's own, buildPath).
#include "qt_test_paths.h"
#include "skip.h"

#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace tb::test {

// Why this build or machine cannot start the endless run (the suite's
// target defines TB_CLI_HAS_TRAINER when app/cli's tunebench-cli trains);
// empty when it can. A suite skips the case with this reason (TB_SKIP).
inline QString whyNoEndlessRun()
{
#ifndef TB_CLI_HAS_TRAINER
    return QStringLiteral("this build has no trainer (TUNEBENCH_TRAINER off)");
#else
    return {};
#endif
}

// Writes the run config; `extra` adds YAML (a distributed section). False
// when the file cannot be written.
inline bool writeEndlessRunConfig(
    const QString& path, const QString& runDir, const QString& extra = {})
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return false;
    file.write(QStringLiteral(
        "model: %1\n"
        "method: lora\n"
        "data: {train: %2, format: alpaca,"
        " sequence_length: 128, validation_split: 0.1}\n"
        "training: {max_steps: 100000, micro_batch: 4, learning_rate: 3.0e-3, eval_every: 2}\n"
        "output: {dir: %3}\n%4")
                   .arg(qDemoModelDir(), qSourcePath("resources/demo/tiny_instructions.jsonl"),
                       runDir, extra)
                   .toUtf8());
    return true;
}

// `tunebench-cli train CONFIG` on one thread, its output discarded.
inline bool startTrainer(QProcess& trainer, const QString& config)
{
    trainer.setStandardOutputFile(QProcess::nullDevice());
    trainer.setStandardErrorFile(QProcess::nullDevice());
    trainer.start(qBuildPath("app/cli/tunebench-cli"),
        {QStringLiteral("train"), config, QStringLiteral("--threads"), QStringLiteral("1")});
    return trainer.waitForStarted();
}

} // namespace tb::test
