#pragma once

// What test_exports reads its exports back with: bash for the scripts (the
// syntax, and runs against stand-ins for the cluster's tools) and yaml-cpp.
#include "../support/cli_outcome.h"
#include "plan/plan_input.h"

#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QtTest>

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>

namespace tb::test {

using Shell = CliOutcome;

inline Shell runBash(const QStringList& args,
    const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    ProgramSetup setup;
    setup.environment = env;
    return runProgram(QStringLiteral("bash"), args, 20000, setup);
}

// `bash -n`: the script parses.
inline QString syntaxError(const std::string& script, const QString& dir)
{
    const QString path = dir + "/script.sh";
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return "cannot write " + path;
    file.write(script.data(), qint64(script.size()));
    file.close();
    const Shell r = runBash({"-n", path});
    return r.exitCode == 0 ? QString() : r.err + " (exit " + QString::number(r.exitCode) + ")";
}

inline void writeExecutable(const QString& path, const QByteArray& text)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(text);
    file.close();
    QVERIFY(file.setPermissions(file.permissions() | QFileDevice::ExeOwner));
}

template <typename Enum> QString name(Enum value)
{
    const std::string_view text = tb::plan::toString(value);
    return QString::fromLatin1(text.data(), qsizetype(text.size()));
}

inline YAML::Node parse(const std::string& text)
{
    try {
        return YAML::Load(text);
    } catch (const std::exception& e) {
        qWarning("YAML does not parse: %s\n%s", e.what(), text.c_str());
        return YAML::Node(YAML::NodeType::Undefined);
    }
}

} // namespace tb::test
