#pragma once

#include "job_runner.h"
#include "metrics/event_stream_parser.h"
#include "metrics/run_history.h"
#include "remote/ssh_target.h"
#include "worker_thread.h"

#include <QWidget>
#include <memory>
#include <optional>

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableView;
class QThread;

namespace tb::ui {

class RegistryModel;
class RemoteFollower;
class RunView;

// Attach over SSH to a run started earlier on another machine (by
// tunebench-cli train or launch, torchrun, Slurm): its folder's events.jsonl
// is read over SFTP once a second and shown as on the Runs page; Stop asks
// rank 0's trainer there to stop gracefully. List runs shows the host's run
// registry (runs started detached or across hosts); picking one follows it.
// Connecting, listing, reading and stopping run off the UI thread.
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
    // Reads the host's run registry on the thread pool (remote::
    // remoteRegistry); registryListed tells when it is in the model.
    void listRuns(const QString& host, int port, const QString& identity, const QString& knownHosts,
        const QString& remoteCli);
    // Follows the run of the registry's row `row`: node 0's folder, where
    // rank 0 writes the events. False with `error` for another node's part.
    bool followRegistryRow(int row, QString* error);

    const metrics::RunHistory& history() const;
    RunView* view() const { return m_view; }
    RegistryModel* registry() const { return m_registry; }
    QTableView* registryTable() const { return m_registryTable; }
    QString statusText() const;
    bool isConnected() const { return m_connected; }
    bool canStop() const;

signals:
    void connectionChanged(bool connected);
    void historyChanged();
    void stopFinished(const QString& failure);
    // Empty `failure` when the registry was read.
    void registryListed(const QString& failure);

private:
    void buildLayout();
    void connectFromForm();
    void listRunsFromForm();
    void followPickedRun();
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

    RemoteFollower* m_follower = nullptr; // lives on m_reader's thread
    std::unique_ptr<WorkerThread<RemoteFollower>> m_reader;

    QLineEdit* m_host = nullptr;
    QSpinBox* m_port = nullptr;
    QLineEdit* m_runDir = nullptr;
    QLineEdit* m_identity = nullptr;
    QLineEdit* m_knownHosts = nullptr;
    QPushButton* m_connect = nullptr;
    QPushButton* m_disconnect = nullptr;
    QPushButton* m_stop = nullptr;
    QLineEdit* m_remoteCli = nullptr;
    QPushButton* m_listRuns = nullptr;
    QPushButton* m_followRun = nullptr;
    RegistryModel* m_registry = nullptr;
    JobRunner* m_jobs = nullptr; // the registry listing, a stop
    std::optional<remote::SshTarget> m_followedHost; // where the followed run is, for its stop
    QTableView* m_registryTable = nullptr;
    QLabel* m_status = nullptr;
    RunView* m_view = nullptr;
};

} // namespace tb::ui
