#include "monitor/remote_follower.h"

#include "metrics/event_file_reader.h"
#include "remote/sftp_event_source.h"
#include "remote/ssh_session.h"

namespace tb::ui {

RemoteFollower::RemoteFollower(QObject* parent)
    : RunFollower(parent)
{
    setPollMilliseconds(kRemotePollMilliseconds);
}

RemoteFollower::~RemoteFollower()
{
    // The reader reads through the session: it goes first.
    RunFollower::stop();
}

void RemoteFollower::connectTo(const QString& host, int port, const QString& identity,
    const QString& knownHosts, const QString& runDir)
{
    disconnectFromHost();
    const quint64 attempt = beginGeneration();
    common::Result<remote::SshTarget> target = remote::parseSshTarget(host.trimmed().toStdString());
    if (!target) {
        emit connectFailed(attempt, QString::fromStdString(target.error().toString()));
        return;
    }
    remote::SshTarget where = target.value();
    where.port = port;
    where.identityFile = identity.trimmed().toStdString();
    where.knownHostsFile = knownHosts.trimmed().toStdString();
    common::Result<std::unique_ptr<remote::SshSession>> session =
        remote::SshSession::connect(where);
    if (!session) {
        emit connectFailed(attempt, QString::fromStdString(session.error().toString()));
        return;
    }
    {
        const std::lock_guard lock(m_sessionMutex);
        m_session = std::move(session).value();
    }
    const std::string events = runDir.trimmed().toStdString() + "/events.jsonl";
    auto reader =
        std::make_unique<metrics::EventFileReader>(remote::sftpEventSource(*m_session, events));
    const QString name = QString::fromStdString(reader->path());
    emit connected(attempt, name);
    followReader(std::move(reader));
}

void RemoteFollower::disconnectFromHost()
{
    RunFollower::stop();
    const std::lock_guard lock(m_sessionMutex);
    m_session.reset();
}

void RemoteFollower::interrupt()
{
    const std::lock_guard lock(m_sessionMutex);
    if (m_session)
        m_session->interrupt();
}

} // namespace tb::ui
