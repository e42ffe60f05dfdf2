#pragma once

#include "job_runner.h"
#include "remote/ssh_target.h"

#include <QWidget>

class QLineEdit;
class QSpinBox;
class QTableView;

namespace tb::ui {

class HostsModel;

// The machines Tunebench can reach: this one and the SSH hosts added here
// (kept in the settings), each probed for CPUs, memory, GPUs (nvidia-smi)
// and the Tunebench trainers running there. Probes run on the thread pool,
// one per host; a host that does not answer only marks its own row.
class HostsPage : public QWidget {
    Q_OBJECT

public:
    explicit HostsPage(QWidget* parent = nullptr);

    // False (with `error`) for a bad host text or one already listed; the
    // new host is probed at once.
    bool addHost(const QString& host, int port, const QString& identity, const QString& knownHosts,
        QString* error);
    void removeSelectedHost();
    void probeAll();

    HostsModel* model() const { return m_model; }
    bool isProbing() const { return m_jobs->isRunning(); }

signals:
    void probeFinished(int row);

private:
    void buildLayout();
    void addFromForm();
    void probe(int row);
    void saveHosts() const;
    void restoreHosts();

    HostsModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    QLineEdit* m_host = nullptr;
    QSpinBox* m_port = nullptr;
    QLineEdit* m_identity = nullptr;
    QLineEdit* m_knownHosts = nullptr;
    JobRunner* m_jobs = nullptr; // probes, one key per host
};

} // namespace tb::ui
