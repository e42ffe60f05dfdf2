#include "hosts/hosts_model.h"
#include "qs.h"

#include "plain_tooltip.h"

#include "common/units.h"

#include <QColor>
#include <QStringList>

namespace tb::ui {

namespace {

// "8 x NVIDIA H100 80GB HBM3 (80.0 GiB), 3 % busy"; different models are
// listed one after the other.
QString describeGpus(const remote::HostFacts& facts)
{
    if (facts.gpus.empty())
        return QObject::tr("none (%1)")
            .arg(qs(facts.gpuNote.empty() ? "no GPU listed" : facts.gpuNote));
    QStringList groups;
    std::size_t index = 0;
    while (index < facts.gpus.size()) {
        const remote::GpuFacts& first = facts.gpus[index];
        std::size_t same = index;
        int busiest = -1;
        while (same < facts.gpus.size() && facts.gpus[same].name == first.name) {
            busiest = std::max(busiest, facts.gpus[same].utilizationPercent);
            ++same;
        }
        QString text = QStringLiteral("%1 x %2").arg(same - index).arg(qs(first.name));
        if (first.memoryTotalMiB > 0)
            text += QStringLiteral(" (%1)").arg(
                qs(common::formatBytes(double(first.memoryTotalMiB) * 1024 * 1024)));
        if (busiest >= 0)
            text += QObject::tr(", up to %1 % busy").arg(busiest);
        groups << text;
        index = same;
    }
    return groups.join(QStringLiteral("; "));
}

QString describeTrainers(const remote::HostFacts& facts)
{
    if (facts.trainers.empty())
        return QObject::tr("none");
    QStringList pids;
    for (const remote::RunningTrainer& trainer : facts.trainers)
        pids << QString::number(trainer.pid);
    return QObject::tr("%1 (pid %2)")
        .arg(facts.trainers.size())
        .arg(pids.join(QStringLiteral(", ")));
}

} // namespace

HostsModel::HostsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
    m_entries.push_back(Entry{}); // this machine
}

int HostsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_entries.size());
}

int HostsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString HostsModel::label(const Entry& entry)
{
    return entry.target ? qs(entry.target->describe()) : tr("this machine");
}

QString HostsModel::cellText(const Entry& entry, int column) const
{
    if (column == Host)
        return label(entry)
            + (entry.facts ? QStringLiteral(" — ") + qs(entry.facts->hostName) : QString());
    if (column == Status) {
        if (entry.probing)
            return tr("probing…");
        if (!entry.error.isEmpty())
            return entry.error;
        return entry.facts ? tr("ok") : tr("not probed");
    }
    if (!entry.facts)
        return {};
    const remote::HostFacts& facts = *entry.facts;
    switch (column) {
    case Cpus:
        return QString::number(facts.cpuCount);
    case Memory:
        if (facts.memoryTotalBytes < 0)
            return {};
        return tr("%1 free of %2")
            .arg(qs(common::formatBytes(double(facts.memoryAvailableBytes))),
                qs(common::formatBytes(double(facts.memoryTotalBytes))));
    case Gpus:
        return describeGpus(facts);
    case Trainers:
        return describeTrainers(facts);
    default:
        return {};
    }
}

QVariant HostsModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const Entry& entry = m_entries[std::size_t(index.row())];
    if (role == Qt::DisplayRole)
        return cellText(entry, index.column());
    if (role == Qt::ToolTipRole)
        return plainToolTip(cellText(entry, index.column()));
    if (role == Qt::ForegroundRole && index.column() == Status && !entry.error.isEmpty())
        return QColor(180, 30, 30);
    return {};
}

QVariant HostsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Host:
        return tr("Host");
    case Cpus:
        return tr("CPUs");
    case Memory:
        return tr("Memory");
    case Gpus:
        return tr("GPUs");
    case Trainers:
        return tr("Tunebench trainers running");
    case Status:
        return tr("Status");
    }
    return {};
}

bool HostsModel::addHost(const remote::SshTarget& target)
{
    for (const Entry& entry : m_entries) {
        if (entry.target && entry.target->describe() == target.describe())
            return false;
    }
    const int row = rowCount();
    beginInsertRows({}, row, row);
    m_entries.push_back(Entry{target, false, std::nullopt, {}});
    endInsertRows();
    return true;
}

void HostsModel::removeRow(int row)
{
    if (row <= 0 || row >= rowCount()) // this machine stays
        return;
    beginRemoveRows({}, row, row);
    m_entries.erase(m_entries.begin() + row);
    endRemoveRows();
}

void HostsModel::setProbing(int row)
{
    m_entries[std::size_t(row)].probing = true;
    emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

void HostsModel::setResult(int row, const common::Result<remote::HostFacts>& result)
{
    Entry& entry = m_entries[std::size_t(row)];
    entry.probing = false;
    if (result) {
        entry.facts = *result;
        entry.error.clear();
    } else {
        entry.error = qs(result.error().toString());
    }
    emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

} // namespace tb::ui
