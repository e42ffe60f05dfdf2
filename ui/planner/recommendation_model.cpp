#include "planner/recommendation_model.h"

#include "common/units.h"

#include <set>

namespace tb::ui {

namespace {

QString text(const std::string& value)
{
    return QString::fromStdString(value);
}

QString text(std::string_view value)
{
    return QString::fromUtf8(value.data(), static_cast<qsizetype>(value.size()));
}

} // namespace

void RecommendationModel::setRecommendation(const plan::Recommendation& recommendation)
{
    beginResetModel();
    m_options = recommendation.options;
    m_bestForVmSize.assign(m_options.size(), false);
    std::set<std::string> seen;
    for (size_t i = 0; i < m_options.size(); ++i)
        m_bestForVmSize[i] = seen.insert(m_options[i].vmSize).second;
    endResetModel();
}

bool RecommendationModel::isBestForVmSize(int row) const
{
    return row >= 0 && row < static_cast<int>(m_bestForVmSize.size())
        && m_bestForVmSize[static_cast<size_t>(row)];
}

const plan::RecommendedOption* RecommendationModel::option(int row) const
{
    if (row < 0 || row >= static_cast<int>(m_options.size()))
        return nullptr;
    return &m_options[static_cast<size_t>(row)];
}

int RecommendationModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_options.size());
}

int RecommendationModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RecommendationModel::data(const QModelIndex& index, int role) const
{
    const plan::RecommendedOption* o = index.isValid() ? option(index.row()) : nullptr;
    if (!o)
        return {};
    const double usedFraction = o->usableBytes > 0 ? o->perGpuBytes / o->usableBytes : 0;
    if (role == kSortRole) {
        switch (index.column()) {
        case Rank:
            return index.row();
        case VmSize:
            return text(o->vmSize);
        case Gpus:
            return o->gpusTotal;
        case Nodes:
            return o->nodes;
        case Strategy:
            return text(plan::toString(o->strategy));
        case Fits:
            return o->fits;
        case Trainer:
            return o->trainer.runs;
        case MemoryUsed:
            return usedFraction;
        case TokensPerSecond:
            return o->tokensPerSecond;
        case Hours:
            return o->hours;
        case Cost:
            return o->costUsd;
        }
        return {};
    }
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case Rank:
            return index.row() + 1;
        case VmSize:
            return text(o->vmSize);
        case Gpus:
            return QStringLiteral("%1 x %2").arg(o->gpusTotal).arg(text(o->gpuId));
        case Nodes:
            return o->nodes;
        case Strategy:
            return text(plan::label(o->strategy));
        case Fits:
            return o->fits ? tr("yes") : tr("no");
        case Trainer:
            return o->trainer.runs ? tr("yes") : tr("no");
        case MemoryUsed:
            return QStringLiteral("%1 %").arg(usedFraction * 100.0, 0, 'f', 0);
        case TokensPerSecond:
            return text(common::formatCount(o->tokensPerSecond));
        case Hours:
            return QString::number(o->hours, 'f', o->hours < 10 ? 1 : 0);
        case Cost:
            return text(common::formatMoney(o->costUsd));
        }
        return {};
    }
    if (role == Qt::ToolTipRole) {
        QStringList lines;
        lines << tr("%1 per GPU of %2 usable")
                     .arg(text(common::formatBytes(o->perGpuBytes)),
                         text(common::formatBytes(o->usableBytes)));
        lines << tr("%1 per hour for %2 node(s)")
                     .arg(text(common::formatMoney(o->usdPerHour)))
                     .arg(o->nodes);
        if (!o->trainer.runs)
            lines << tr("Not for Tunebench's trainer: %1").arg(text(o->trainer.reason));
        for (const std::string& note : o->notes)
            lines << text(note);
        return lines.join(QLatin1Char('\n'));
    }
    if (role == Qt::TextAlignmentRole && index.column() != VmSize && index.column() != Strategy)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant RecommendationModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == Trainer)
        return tr("Whether Tunebench's own trainer runs on these GPUs");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Rank:
        return tr("#");
    case VmSize:
        return tr("VM size");
    case Gpus:
        return tr("GPUs");
    case Nodes:
        return tr("Nodes");
    case Strategy:
        return tr("Strategy");
    case Fits:
        return tr("Fits");
    case Trainer:
        return tr("Trainer");
    case MemoryUsed:
        return tr("Memory used");
    case TokensPerSecond:
        return tr("Tokens/s");
    case Hours:
        return tr("Hours");
    case Cost:
        return tr("Cost");
    }
    return {};
}

RecommendationFilterModel::RecommendationFilterModel(QObject* parent)
    : QSortFilterProxyModel(parent)
{
    setSortRole(RecommendationModel::kSortRole);
}

void RecommendationFilterModel::setMaxNodes(int nodes)
{
    m_maxNodes = nodes;
    invalidateFilter();
}

void RecommendationFilterModel::setMaxHours(double hours)
{
    m_maxHours = hours;
    invalidateFilter();
}

void RecommendationFilterModel::setBestPerVmSizeOnly(bool only)
{
    m_bestPerVmSizeOnly = only;
    invalidateFilter();
}

void RecommendationFilterModel::setTrainerRunnableOnly(bool only)
{
    m_trainerRunnableOnly = only;
    invalidateFilter();
}

void RecommendationFilterModel::setMaxCostUsd(double usd)
{
    m_maxCostUsd = usd;
    invalidateFilter();
}

bool RecommendationFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex&) const
{
    const auto* source = qobject_cast<const RecommendationModel*>(sourceModel());
    const plan::RecommendedOption* o = source ? source->option(sourceRow) : nullptr;
    if (!o)
        return false;
    if (m_bestPerVmSizeOnly && !source->isBestForVmSize(sourceRow))
        return false;
    if (m_trainerRunnableOnly && !o->trainer.runs)
        return false;
    if (m_maxNodes > 0 && o->nodes > m_maxNodes)
        return false;
    if (m_maxHours > 0 && o->hours > m_maxHours)
        return false;
    if (m_maxCostUsd > 0 && o->costUsd > m_maxCostUsd)
        return false;
    return true;
}

void RejectedModel::setRejected(const std::vector<plan::RejectedOption>& rejected)
{
    beginResetModel();
    // A sharded strategy on one GPU is plain training, already listed under
    // DDP: not a rejection a user needs to read.
    m_rejected.clear();
    for (const plan::RejectedOption& option : rejected) {
        if (option.reason != plan::RejectReason::Redundant)
            m_rejected.push_back(option);
    }
    endResetModel();
}

int RejectedModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rejected.size());
}

int RejectedModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RejectedModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= static_cast<int>(m_rejected.size()))
        return {};
    const plan::RejectedOption& r = m_rejected[static_cast<size_t>(index.row())];
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    switch (index.column()) {
    case VmSize:
        return text(r.vmSize);
    case Strategy:
        return text(plan::label(r.strategy));
    case Nodes:
        return r.nodesFrom == r.nodesTo ? QString::number(r.nodesFrom)
                                        : QStringLiteral("%1–%2").arg(r.nodesFrom).arg(r.nodesTo);
    case Reason:
        return text(plan::toString(r.reason));
    case Detail:
        return text(r.detail);
    }
    return {};
}

QVariant RejectedModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case VmSize:
        return tr("VM size");
    case Strategy:
        return tr("Strategy");
    case Nodes:
        return tr("Nodes");
    case Reason:
        return tr("Rejected because");
    case Detail:
        return tr("Detail");
    }
    return {};
}

} // namespace tb::ui
