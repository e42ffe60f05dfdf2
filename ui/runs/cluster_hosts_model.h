#pragma once

#include "remote/ssh_target.h"

#include <QAbstractTableModel>
#include <QHash>
#include <QPointer>

#include <vector>

namespace tb::ui {

class HostsModel;

// The SSH hosts of the Hosts page's inventory (a HostsModel, not a copy of
// it) as the machines of a multi-node run: a check box to pick each and its
// slot count (ranks there), with the GPUs the host's probe found. The
// picked hosts, in the inventory's order, are the run's nodes: the first is
// node 0, where rank 0 writes the run folder.
class ClusterHostsModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Host, Slots, Gpus, ColumnCount };
    static constexpr int kMaxSlots = 64;

    explicit ClusterHostsModel(QObject* parent = nullptr);

    // Follows `inventory` as it changes; picks and slots survive by host.
    void setInventory(HostsModel* inventory);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role) override;

    // Picks the host `describe()` names (user@host:port) with `slotCount` ranks.
    bool pick(const QString& host, int slotCount);

    struct Node {
        remote::SshTarget target;
        int slotCount = 1;
    };
    std::vector<Node> pickedNodes() const;

private:
    struct Choice {
        bool picked = false;
        int slotCount = 1;
    };
    void rebuild();
    QString hostOf(int row) const;

    QPointer<HostsModel> m_inventory;
    std::vector<remote::SshTarget> m_targets;
    std::vector<int> m_inventoryRows; // the inventory's row of each of ours
    QHash<QString, Choice> m_choices; // by describe()
};

// The hostfile of `nodes` in DeepSpeed's format, a node a line:
// "[user@]host[:port] slots=N".
QString hostfileText(const std::vector<ClusterHostsModel::Node>& nodes);

} // namespace tb::ui
