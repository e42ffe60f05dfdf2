#pragma once

#include "../support/json_line_server.h"
#include "../support/qt_test_paths.h"

#include <QJsonArray>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

#include <memory>

// Runs tests/reference/hf_reference.py with the reference environment's
// Python (tb::test::referencePython(), chosen at configure time), offline, as one
// serving process per suite.
namespace tb::reference {

struct ProcessOutcome {
    bool ok = false;
    QString problem; // what failed, with the command and its stderr
};

inline QProcessEnvironment offlineEnvironment()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("HF_HUB_OFFLINE", "1");
    environment.insert("TRANSFORMERS_OFFLINE", "1");
    environment.insert("HF_DATASETS_OFFLINE", "1");
    environment.insert("TOKENIZERS_PARALLELISM", "false");
    return environment;
}

// hf_reference.py in its `serve` mode: one Python process answers every
// subcommand of a suite, so torch, transformers and peft load once.
class ReferenceServer {
public:
    ReferenceServer()
        : m_server(QString::fromUtf8(tb::test::referencePython()),
            {tb::test::qSourcePath("tests/reference/hf_reference.py"), "serve"},
            offlineEnvironment())
    {
    }

    ProcessOutcome run(const QString& command, const QStringList& arguments, int timeoutMs)
    {
        const QString shown = "hf_reference.py " + command + " " + arguments.join(' ');
        const auto asked = m_server.ask(
            QJsonArray::fromStringList(QStringList{command} + arguments), timeoutMs, shown);
        if (!asked.problem.isEmpty())
            return {false, asked.problem};
        const QJsonValue problem = asked.answer.value("problem");
        if (problem.isString())
            return {false, shown + ": " + problem.toString()};
        return {true, {}};
    }

    bool running() const { return m_server.running(); }

private:
    test::JsonLineServer m_server;
};

inline std::unique_ptr<ReferenceServer>& referenceServer()
{
    static std::unique_ptr<ReferenceServer> server;
    return server;
}

// Ends the server (the suite's cleanupTestCase), before Qt's application object goes.
inline void stopReferenceServer()
{
    referenceServer().reset();
}

inline ProcessOutcome runReference(
    const QString& command, const QStringList& arguments, int timeoutMs = 300000)
{
    auto& server = referenceServer();
    if (!server || !server->running())
        server = std::make_unique<ReferenceServer>();
    return server->run(command, arguments, timeoutMs);
}

} // namespace tb::reference
