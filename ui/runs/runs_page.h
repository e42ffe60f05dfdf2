#pragma once

#include "metrics/event_stream_parser.h"
#include "metrics/run_history.h"
#include "worker_thread.h"

#include <QWidget>
#include <memory>

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QThread;

namespace tb::ui {

class ClusterPanel;
class HostsModel;
class RunCharts;
class RemoteFollower;
class RunFollower;
class RunLauncher;
class RunView;

// Start a run from a run config (tunebench-cli launch: ranks on this
// machine, or with SSH across hosts picked from the Hosts page) or open a
// run folder written earlier or by another program, and follow its event
// stream live (RunView: summary, curves, warnings and errors) with the
// launcher's output beside it. The file is read on a worker thread (over
// SFTP from node 0 for a multi-node run); the UI thread only folds and draws.
class RunsPage : public QWidget {
    Q_OBJECT

public:
    explicit RunsPage(QWidget* parent = nullptr);
    ~RunsPage() override;

    // Follows <dir>/events.jsonl (rank 0's stream) from its first byte.
    void followRunFolder(const QString& dir);
    // Loads the config (for its output folder), starts the launcher and
    // follows the folder. False with `error` set when it cannot start.
    bool startRun(const QString& configPath, int ranks, QString* error);
#ifdef TB_HAVE_SSH
    // The Hosts page's machines, to pick a multi-node run's hosts from.
    void setHostInventory(HostsModel* inventory);
    ClusterPanel* clusterPanel() const
    {
        return m_cluster;
    }
    // `tunebench-cli launch CONFIG --hostfile ...` on the hosts picked in the
    // cluster panel; rank 0's folder is followed on node 0 once the launch
    // names it. False with `error` set when it cannot start.
    bool startMultiNodeRun(const QString& configPath, QString* error);
#endif
    // The run this page started (through its launcher), else the followed
    // run when it runs on this machine (metrics/run_control.h). Empty when a
    // stop was sent, otherwise why none could be.
    QString stopRun();

    const metrics::RunHistory& history() const;
    RunCharts* charts() const;
    RunLauncher* launcher() const
    {
        return m_launcher;
    }
    QString followedFolder() const
    {
        return m_folder;
    }
    QString summaryText() const;
    QStringList messageTexts() const;
    bool canStop() const;

signals:
    // After each batch of lines read (tests and the status bar listen).
    void historyChanged();
    void runFinished(int exitCode);

private:
    void buildLayout();
    bool isCurrent(quint64 generation) const;
    void onLinesRead(quint64 generation, const QVector<tb::metrics::StreamItem>& items);
    void onReadFailed(quint64 generation, const QString& message);
    void browseConfig();
    void browseRunFolder();
    void startFromForm();
    void updateButtons();
    void onLauncherLine(const QString& line);
#ifdef TB_HAVE_SSH
    void onLauncherStatus(const QString& line); // launch --status-json's stdout
#endif
    void onLauncherFinished(int exitCode, const QString& description);
    void followRemoteFolder(const QString& dir);

    quint64 m_generation = 0;
    QString m_folder;

    RunFollower* m_follower = nullptr; // lives on m_reader's thread
    RemoteFollower* m_remoteFollower = nullptr; // m_follower, when built with SSH
    std::unique_ptr<WorkerThread<RunFollower>> m_reader;
    RunLauncher* m_launcher = nullptr;

    QLineEdit* m_configPath = nullptr;
    QSpinBox* m_ranks = nullptr;
    QPushButton* m_start = nullptr;
    QPushButton* m_stop = nullptr;
    QLabel* m_folderLabel = nullptr;
    RunView* m_view = nullptr;
    QPlainTextEdit* m_output = nullptr;
    ClusterPanel* m_cluster = nullptr; // with SSH only
    bool m_multiNode = false; // the launcher's run is across hosts
    // A multi-node run started; its run folder is not known yet.
    bool m_awaitingNodeZero = false;
};

} // namespace tb::ui
