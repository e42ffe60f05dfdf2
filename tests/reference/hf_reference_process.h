#pragma once

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

#include <memory>

// Runs tests/reference/hf_reference.py with the reference environment's
// Python (TB_REFERENCE_PYTHON, chosen at configure time), offline, as one
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
    {
        m_process.setProcessEnvironment(offlineEnvironment());
        m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_process.start(QStringLiteral(TB_REFERENCE_PYTHON),
            {QStringLiteral(TB_SOURCE_DIR "/tests/reference/hf_reference.py"), "serve"});
    }
    ~ReferenceServer()
    {
        m_process.closeWriteChannel();
        if (!m_process.waitForFinished(30000))
            m_process.kill();
        m_process.waitForFinished();
    }

    ProcessOutcome run(const QString& command, const QStringList& arguments, int timeoutMs)
    {
        const QString shown = "hf_reference.py " + command + " " + arguments.join(' ');
        if (m_process.state() != QProcess::Running && !m_process.waitForStarted())
            return {false, shown + ": the reference Python cannot start: " + m_process.errorString()
                    + " (exit " + QString::number(m_process.exitCode()) + ")"};
        const QJsonArray argv = QJsonArray::fromStringList(QStringList{command} + arguments);
        m_process.write(QJsonDocument(argv).toJson(QJsonDocument::Compact) + "\n");
        while (!m_process.canReadLine()) {
            if (m_process.waitForReadyRead(timeoutMs))
                continue;
            if (m_process.state() == QProcess::NotRunning)
                return {false, shown + ": the reference Python ended, exit "
                        + QString::number(m_process.exitCode())
                        + " (3: a package is missing); its messages are above"};
            m_process.kill(); // the next call starts a new one
            m_process.waitForFinished();
            return {false, shown + ": no answer within " + QString::number(timeoutMs) + " ms"};
        }
        const QJsonObject answer = QJsonDocument::fromJson(m_process.readLine()).object();
        const QJsonValue problem = answer.value("problem");
        if (problem.isString())
            return {false, shown + ": " + problem.toString()};
        return {true, {}};
    }

    bool running() const { return m_process.state() == QProcess::Running; }

private:
    QProcess m_process;
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
