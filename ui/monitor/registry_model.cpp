#include "monitor/registry_model.h"

#include "plain_tooltip.h"

#include <QBrush>
#include <QColor>

namespace tb::ui {

namespace {

QString stateText(const launch::RegistryEntry& entry)
{
    return QString::fromStdString(entry.stateText());
}

} // namespace

RegistryModel::RegistryModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

int RegistryModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_entries.size());
}

int RegistryModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RegistryModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const launch::RegistryEntry& entry = m_entries[std::size_t(index.row())];
    if (role == Qt::ForegroundRole && index.column() == State && entry.failed())
        return QBrush(QColor(0xb4, 0x1e, 0x1e));
    if (role == Qt::ToolTipRole && !entry.summary.empty())
        return plainToolTip(QString::fromStdString(entry.summary));
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Run:
        return QString::fromStdString(entry.runId);
    case Node:
        return QStringLiteral("%1/%2").arg(entry.nodeRank).arg(entry.nnodes);
    case State:
        return stateText(entry);
    case Pid:
        return entry.pid;
    case Started:
        return QString::fromStdString(entry.startedAt);
    case Folder:
        return QString::fromStdString(entry.runDir);
    }
    return {};
}

QVariant RegistryModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Run:
        return tr("Run");
    case Node:
        return tr("Node");
    case State:
        return tr("State");
    case Pid:
        return tr("Launcher pid");
    case Started:
        return tr("Started (UTC)");
    case Folder:
        return tr("Run folder");
    }
    return {};
}

void RegistryModel::setEntries(std::vector<launch::RegistryEntry> entries)
{
    beginResetModel();
    m_entries = std::move(entries);
    endResetModel();
}

} // namespace tb::ui
