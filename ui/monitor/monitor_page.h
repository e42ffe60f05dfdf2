#pragma once

#include "metrics/event_stream_parser.h"
#include "metrics/run_history.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QThread;

namespace tb::ui {

class RemoteFollower;
class RunView;

// Attach over SSH to a run started earlier on another machine (by
// tunebench-cli train or launch, torchrun, Slurm): its folder's events.jsonl
// is read over SFTP once a second and shown as on the Runs page; Stop asks
// rank 0's trainer there to stop gracefully. Connecting, reading and
// stopping run on a worker thread.
class MonitorPage : public QWidget {
    Q_OBJECT

public:
    explicit MonitorPage(QWidget* parent = nullptr);
    ~MonitorPage() override;

    // `host` is [USER@]HOST; empty identity or knownHosts: ssh's defaults.
    void connectTo(const QString& host, int port, const QString& identity,
        const QString& knownHosts, const QString& runDir);
    void disconnectFromHost();
    void stopRun();

    const metrics::RunHistory& history() const;
    RunView* view() const { return m_view; }
    QString statusText() const;
    bool isConnected() const { return m_connected; }
    bool canStop() const;

signals:
    void connectionChanged(bool connected);
    void historyChanged();
    void stopFinished(const QString& failure);

private:
    void buildLayout();
    void connectFromForm();
    void onConnected(quint64 generation, const QString& eventsFile);
    void onConnectFailed(quint64 generation, const QString& message);
    void onLinesRead(quint64 generation, const QVector<tb::metrics::StreamItem>& items);
    void onReadFailed(quint64 generation, const QString& message);
    void onStopFinished(const QString& failure, qlonglong pid);
    void setStatus(const QString& text, bool error);
    void updateButtons();

    quint64 m_generation = 0;
    bool m_connected = false;
    bool m_connecting = false;
    bool m_stopping = false;

    QThread* m_thread = nullptr;
    RemoteFollower* m_follower = nullptr;

    QLineEdit* m_host = nullptr;
    QSpinBox* m_port = nullptr;
    QLineEdit* m_runDir = nullptr;
    QLineEdit* m_identity = nullptr;
    QLineEdit* m_knownHosts = nullptr;
    QPushButton* m_connect = nullptr;
    QPushButton* m_disconnect = nullptr;
    QPushButton* m_stop = nullptr;
    QLabel* m_status = nullptr;
    RunView* m_view = nullptr;
};

} // namespace tb::ui
