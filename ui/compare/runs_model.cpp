#include "compare/runs_model.h"
#include "qs.h"

#include "common/units.h"

#include <QDateTime>

#include <cmath>

namespace tb::ui {

namespace {

QString ranksText(const metrics::RunEntry& run)
{
    return run.nodes > 1 ? QObject::tr("%1 on %2 nodes").arg(run.worldSize).arg(run.nodes)
                         : QString::number(run.worldSize);
}

} // namespace

RunsModel::RunsModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

void RunsModel::setRuns(const QVector<metrics::RunEntry>& runs)
{
    bool sameRows = runs.size() == m_runs.size();
    for (qsizetype row = 0; sameRows && row < runs.size(); ++row)
        sameRows = runs[row].dir == m_runs[row].dir;
    if (sameRows) {
        m_runs = runs;
        if (!m_runs.isEmpty())
            emit dataChanged(index(0, 0), index(int(m_runs.size()) - 1, ColumnCount - 1));
        return;
    }
    beginResetModel();
    m_runs = runs;
    endResetModel();
}

void RunsModel::setPicked(const QString& dir, bool picked)
{
    if (picked == m_picked.contains(dir))
        return;
    if (picked)
        m_picked.append(dir);
    else
        m_picked.removeAll(dir);
    if (const int row = rowOf(dir); row >= 0)
        emit dataChanged(index(row, Name), index(row, Name), {Qt::CheckStateRole});
    emit pickedChanged(m_picked);
}

int RunsModel::rowOf(const QString& dir) const
{
    for (qsizetype row = 0; row < m_runs.size(); ++row) {
        if (qs(m_runs[row].dir) == dir)
            return int(row);
    }
    return -1;
}

int RunsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_runs.size());
}

int RunsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const metrics::RunEntry& run = m_runs[index.row()];
    switch (role) {
    case Qt::DisplayRole:
        return display(run, index.column());
    case kSortRole:
        return sortKey(run, index.column());
    case kDirRole:
        return qs(run.dir);
    case Qt::CheckStateRole:
        if (index.column() == Name)
            return m_picked.contains(qs(run.dir)) ? Qt::Checked : Qt::Unchecked;
        return {};
    case Qt::ToolTipRole:
        return run.problem.empty() ? qs(run.dir) : qs(run.dir + ": " + run.problem);
    case Qt::TextAlignmentRole:
        return index.column() >= Ranks && index.column() != State
            ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
            : QVariant();
    default:
        return {};
    }
}

QVariant RunsModel::display(const metrics::RunEntry& run, int column) const
{
    if (!run.problem.empty())
        return column == Name ? qs(run.name) : column == State ? tr("unreadable") : QVariant();
    switch (column) {
    case Name:
        return qs(run.name);
    case Model:
        return qs(run.modelName);
    case Method:
        return qs(run.method);
    case Ranks:
        return ranksText(run);
    case State:
        return qs(run.state);
    case Steps:
        return run.totalSteps > 0 ? QStringLiteral("%1/%2").arg(run.steps).arg(run.totalSteps)
                                  : QString::number(run.steps);
    case Loss:
        return std::isfinite(run.lastLoss) ? QString::number(run.lastLoss, 'f', 4) : QString();
    case TokensPerSecond:
        return run.tokensPerSecond > 0 ? QString::number(run.tokensPerSecond, 'f', 0) : QString();
    case Started:
        return run.startSeconds > 0
            ? QDateTime::fromMSecsSinceEpoch(qint64(run.startSeconds * 1000))
                  .toString(QStringLiteral("yyyy-MM-dd HH:mm"))
            : QString();
    case Duration:
        return run.durationSeconds >= 0 ? qs(common::formatDuration(run.durationSeconds))
                                        : QString();
    default:
        return {};
    }
}

QVariant RunsModel::sortKey(const metrics::RunEntry& run, int column) const
{
    switch (column) {
    case Ranks:
        return run.worldSize;
    case Steps:
        return qlonglong(run.steps);
    case Loss:
        return std::isfinite(run.lastLoss) ? run.lastLoss : 1e300;
    case TokensPerSecond:
        return run.tokensPerSecond;
    case Started:
        return run.startSeconds;
    case Duration:
        return run.durationSeconds;
    default:
        return display(run, column);
    }
}

bool RunsModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)
        || role != Qt::CheckStateRole || index.column() != Name)
        return false;
    setPicked(qs(m_runs[index.row()].dir), value.value<Qt::CheckState>() == Qt::Checked);
    return true;
}

Qt::ItemFlags RunsModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    const Qt::ItemFlags flags = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    return index.column() == Name ? flags | Qt::ItemIsUserCheckable : flags;
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* const kTitles[ColumnCount] = {QT_TR_NOOP("name"), QT_TR_NOOP("model"),
        QT_TR_NOOP("method"), QT_TR_NOOP("ranks"), QT_TR_NOOP("state"), QT_TR_NOOP("steps"),
        QT_TR_NOOP("loss"), QT_TR_NOOP("tokens/s"), QT_TR_NOOP("started"), QT_TR_NOOP("duration")};
    return section >= 0 && section < ColumnCount ? tr(kTitles[section]) : QVariant();
}

} // namespace tb::ui
