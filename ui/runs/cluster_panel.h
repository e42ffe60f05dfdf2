#pragma once

#include "remote/ssh_target.h"

#include <QGroupBox>
#include <QStringList>

#include <memory>
#include <optional>

class QCheckBox;
class QLineEdit;
class QTableView;
class QTemporaryDir;

namespace tb::ui {

class ClusterHostsModel;
class HostsModel;
class NodeStateModel;

// The Runs page's multi-node part (checkable: unchecked, runs start on this
// machine): the Hosts page's SSH hosts to pick with a slot count each, the
// trainer's arguments, and each node's state while the launch goes on.
// It turns the picks into `tunebench-cli launch --hostfile` arguments,
// writing the hostfile into a folder of its own that lives until the next
// launch.
class ClusterPanel : public QGroupBox {
    Q_OBJECT

public:
    explicit ClusterPanel(QWidget* parent = nullptr);
    ~ClusterPanel() override;

    void setInventory(HostsModel* inventory);
    ClusterHostsModel* hostsModel() const { return m_hosts; }
    NodeStateModel* nodesModel() const { return m_nodes; }
    void setTrainerArguments(const QStringList& arguments);
    void setSync(bool sync);

    // The CLI's arguments for a launch of `configPath` on the picked hosts
    // (node states reset to preflight), else nothing with `error` set: no
    // host picked, hosts that need different keys or known hosts files, a
    // hostfile that cannot be written, trainer arguments that do not split.
    std::optional<QStringList> launchArguments(const QString& configPath, QString* error);
    // Node 0 of the last launch, to follow rank 0's run folder there.
    const remote::SshTarget& masterTarget() const { return m_master; }
    QString hostfilePath() const { return m_hostfile; }

private:
    QTableView* m_hostsTable = nullptr;
    QTableView* m_nodesTable = nullptr;
    QLineEdit* m_trainerArguments = nullptr;
    QCheckBox* m_sync = nullptr;
    ClusterHostsModel* m_hosts = nullptr;
    NodeStateModel* m_nodes = nullptr;
    std::unique_ptr<QTemporaryDir> m_hostfileDir;
    QString m_hostfile;
    remote::SshTarget m_master;
};

} // namespace tb::ui
