#pragma once

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

// A Python reference script kept running for a whole suite: each request is
// one line of JSON on its stdin, each answer one JSON object on a line of
// its stdout. The libraries a reference imports (torch, transformers,
// azure-ai-ml) cost seconds to tens of seconds to load on a small or loaded
// machine; loading them once per suite keeps that cost out of every row's
// deadline.
namespace tb::test {

struct ServerAnswer {
    QJsonObject answer;
    QByteArray line; // the answer as the server wrote it
    QString problem; // empty: the server answered
};

class JsonLineServer {
public:
    JsonLineServer(const QString& program, const QStringList& arguments,
        const QProcessEnvironment& environment)
    {
        m_process.setProcessEnvironment(environment);
        m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_process.start(program, arguments);
    }
    ~JsonLineServer()
    {
        m_process.closeWriteChannel();
        if (!m_process.waitForFinished(30000))
            m_process.kill();
        m_process.waitForFinished();
    }
    JsonLineServer(const JsonLineServer&) = delete;
    JsonLineServer& operator=(const JsonLineServer&) = delete;

    // Sends `request` and waits up to `timeoutMs` for its answer; `shown`
    // names the request in a problem. A server that does not answer in time
    // is killed, so the next request meets a fresh one.
    ServerAnswer ask(const QJsonArray& request, int timeoutMs, const QString& shown)
    {
        if (m_process.state() != QProcess::Running && !m_process.waitForStarted())
            return {
                {}, {}, shown + ": the reference Python cannot start: " + m_process.errorString()};
        m_process.write(QJsonDocument(request).toJson(QJsonDocument::Compact) + "\n");
        while (!m_process.canReadLine()) {
            if (m_process.waitForReadyRead(timeoutMs))
                continue;
            if (m_process.state() == QProcess::NotRunning)
                return {{}, {},
                    shown + ": the reference Python ended, exit "
                        + QString::number(m_process.exitCode())
                        + " (3: a package is missing); its messages are above"};
            m_process.kill();
            m_process.waitForFinished();
            return {{}, {}, shown + ": no answer within " + QString::number(timeoutMs) + " ms"};
        }
        const QByteArray line = m_process.readLine();
        QJsonParseError error;
        const QJsonDocument document = QJsonDocument::fromJson(line, &error);
        if (!document.isObject())
            return {{}, line,
                shown + ": the answer is not a JSON object (" + error.errorString()
                    + "): " + QString::fromUtf8(line)};
        return {document.object(), line, {}};
    }

    bool running() const { return m_process.state() == QProcess::Running; }

private:
    QProcess m_process;
};

} // namespace tb::test
