#include "planner/component_model.h"

#include "common/units.h"
#include "planner/component_colors.h"

namespace tb::ui {

namespace {

QString figureValue(const plan::Figure& figure)
{
    if (figure.unit == "USD")
        return QString::fromStdString(common::formatMoney(figure.value));
    if (figure.unit == "s")
        return QString::fromStdString(common::formatDuration(figure.value));
    if (figure.unit.empty())
        return QString::number(figure.value, 'g', 4);
    return QStringLiteral("%1 %2").arg(QString::fromStdString(common::formatCount(figure.value)),
        QString::fromStdString(figure.unit));
}

} // namespace

void ComponentModel::setResult(const plan::PlanResult& result)
{
    beginResetModel();
    m_rows.clear();
    for (const plan::MemoryComponent& c : result.memory) {
        if (c.bytes <= 0)
            continue;
        m_rows.push_back(
            {QString::fromStdString(c.label), QString::fromStdString(common::formatBytes(c.bytes)),
                QString::fromStdString(c.explanation), QString::fromStdString(c.source),
                categoryColor(c.category)});
    }
    if (result.cpuBytesPerNode > 0)
        m_rows.push_back({tr("CPU memory per node (offload)"),
            QString::fromStdString(common::formatBytes(result.cpuBytesPerNode)),
            QString::fromStdString(result.cpuExplanation), QString(), QColor()});
    for (const plan::Figure& f : result.figures)
        m_rows.push_back({QString::fromStdString(f.label), figureValue(f),
            QString::fromStdString(f.explanation), QString::fromStdString(f.source), QColor()});
    endResetModel();
}

int ComponentModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int ComponentModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ComponentModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= static_cast<int>(m_rows.size()))
        return {};
    const Row& row = m_rows[static_cast<size_t>(index.row())];
    if (role == Qt::DecorationRole && index.column() == Name && row.color.isValid())
        return row.color;
    if (role == Qt::TextAlignmentRole && index.column() == Value)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    switch (index.column()) {
    case Name:
        return row.name;
    case Value:
        return row.value;
    case Explanation:
        return row.explanation;
    case Source:
        return row.source;
    }
    return {};
}

QVariant ComponentModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return tr("Term");
    case Value:
        return tr("Value");
    case Explanation:
        return tr("How it is computed");
    case Source:
        return tr("Source");
    }
    return {};
}

} // namespace tb::ui
