#pragma once

#include "runs/run_follower.h"

#include <memory>
#include <mutex>

namespace tb::remote {
class SshSession;
}

namespace tb::ui {

// A RunFollower for a run folder on another machine: connects over SSH on
// its worker thread (connecting blocks for up to the timeout), then reads
// events.jsonl over SFTP once a second.
class RemoteFollower : public RunFollower {
    Q_OBJECT

public:
    explicit RemoteFollower(QObject* parent = nullptr);
    ~RemoteFollower() override;

    static constexpr int kRemotePollMilliseconds = 1000;

    // Ends the connection's call under way at once, from any thread (the
    // page's, as it closes): a hung host or file system never holds the
    // window. The connection is gone for good.
    void interrupt();

public slots:
    // `host` is [USER@]HOST; empty identity or knownHosts: ssh's defaults.
    void connectTo(const QString& host, int port, const QString& identity,
        const QString& knownHosts, const QString& runDir);
    void disconnectFromHost();

signals:
    void connected(quint64 generation, const QString& eventsFile);
    void connectFailed(quint64 generation, const QString& message);

private:
    std::mutex m_sessionMutex; // m_session replaced on the worker thread, interrupted from any
    std::unique_ptr<remote::SshSession> m_session;
};

} // namespace tb::ui
