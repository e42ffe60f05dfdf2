#include "runs/cluster_hosts_model.h"

#include "hosts/hosts_model.h"

namespace tb::ui {

ClusterHostsModel::ClusterHostsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void ClusterHostsModel::setInventory(HostsModel* inventory)
{
    if (m_inventory)
        disconnect(m_inventory, nullptr, this, nullptr);
    m_inventory = inventory;
    if (inventory) {
        connect(inventory, &QAbstractItemModel::rowsInserted, this, &ClusterHostsModel::rebuild);
        connect(inventory, &QAbstractItemModel::rowsRemoved, this, &ClusterHostsModel::rebuild);
        connect(inventory, &QAbstractItemModel::modelReset, this, &ClusterHostsModel::rebuild);
        connect(inventory, &QAbstractItemModel::dataChanged, this, [this] {
            if (rowCount() > 0)
                emit dataChanged(index(0, Gpus), index(rowCount() - 1, Gpus));
        });
    }
    rebuild();
}

void ClusterHostsModel::rebuild()
{
    beginResetModel();
    m_targets.clear();
    m_inventoryRows.clear();
    if (m_inventory) {
        for (int row = 0; row < m_inventory->rowCount(); ++row) {
            const HostsModel::Entry& entry = m_inventory->entries()[std::size_t(row)];
            if (!entry.target)
                continue; // this machine: not reached over SSH
            m_targets.push_back(*entry.target);
            m_inventoryRows.push_back(row);
        }
    }
    endResetModel();
}

int ClusterHostsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_targets.size());
}

int ClusterHostsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString ClusterHostsModel::hostOf(int row) const
{
    return QString::fromStdString(m_targets[std::size_t(row)].describe());
}

QVariant ClusterHostsModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const Choice choice = m_choices.value(hostOf(index.row()));
    if (index.column() == Host && role == Qt::CheckStateRole)
        return choice.picked ? Qt::Checked : Qt::Unchecked;
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    switch (index.column()) {
    case Host:
        return hostOf(index.row());
    case Slots:
        return choice.slotCount;
    case Gpus:
        if (m_inventory) {
            const int row = m_inventoryRows[std::size_t(index.row())];
            const QString gpus =
                m_inventory->data(m_inventory->index(row, HostsModel::Gpus), Qt::DisplayRole)
                    .toString();
            return gpus.isEmpty() ? tr("not probed yet (Hosts page)") : gpus;
        }
        return {};
    }
    return {};
}

QVariant ClusterHostsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::ToolTipRole && section == Host)
        return tr("The picked hosts are the run's nodes in this order: the first is node 0 (rank "
                  "0, the master)");
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Host:
        return tr("Host");
    case Slots:
        return tr("Slots");
    case Gpus:
        return tr("GPUs (last probe)");
    }
    return {};
}

Qt::ItemFlags ClusterHostsModel::flags(const QModelIndex& index) const
{
    Qt::ItemFlags flags = QAbstractTableModel::flags(index);
    if (index.isValid() && index.column() == Host)
        flags |= Qt::ItemIsUserCheckable;
    if (index.isValid() && index.column() == Slots)
        flags |= Qt::ItemIsEditable;
    return flags;
}

bool ClusterHostsModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (!index.isValid() || index.row() >= rowCount())
        return false;
    Choice& choice = m_choices[hostOf(index.row())];
    if (index.column() == Host && role == Qt::CheckStateRole) {
        choice.picked = value.toInt() == Qt::Checked;
    } else if (index.column() == Slots && role == Qt::EditRole) {
        bool ok = false;
        const int count = value.toInt(&ok);
        if (!ok || count < 1 || count > kMaxSlots)
            return false;
        choice.slotCount = count;
    } else {
        return false;
    }
    emit dataChanged(index, index, {role});
    return true;
}

bool ClusterHostsModel::pick(const QString& host, int slotCount)
{
    for (int row = 0; row < rowCount(); ++row) {
        if (hostOf(row) == host)
            return setData(index(row, Host), Qt::Checked, Qt::CheckStateRole)
                && setData(index(row, Slots), slotCount, Qt::EditRole);
    }
    return false;
}

std::vector<ClusterHostsModel::Node> ClusterHostsModel::pickedNodes() const
{
    std::vector<Node> nodes;
    for (int row = 0; row < rowCount(); ++row) {
        const Choice choice = m_choices.value(hostOf(row));
        if (choice.picked)
            nodes.push_back(Node{m_targets[std::size_t(row)], choice.slotCount});
    }
    return nodes;
}

QString hostfileText(const std::vector<ClusterHostsModel::Node>& nodes)
{
    QString text = QStringLiteral("# written by the Tunebench Runs page: node 0 first\n");
    for (const ClusterHostsModel::Node& node : nodes) {
        QString host = QString::fromStdString(node.target.host);
        if (!node.target.user.empty())
            host = QString::fromStdString(node.target.user) + QLatin1Char('@') + host;
        if (node.target.port > 0)
            host += QLatin1Char(':') + QString::number(node.target.port);
        text += QStringLiteral("%1 slots=%2\n").arg(host).arg(node.slotCount);
    }
    return text;
}

} // namespace tb::ui
