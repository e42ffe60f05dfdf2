#include "runs/node_state_model.h"

#include <QBrush>
#include <QColor>

namespace tb::ui {

namespace {

const QString kPreflight = QStringLiteral("preflight");
const QString kPreflightFailed = QStringLiteral("preflight failed");

// What the launch's own words mean to someone watching the nodes.
QString shownState(const NodeLine& line)
{
    if (line.state == QLatin1String("checked"))
        return QStringLiteral("preflight passed");
    if (line.state == QLatin1String("connecting"))
        return kPreflightFailed; // the launch names a node so only when its check found a problem
    if (line.state == QLatin1String("sync"))
        return QStringLiteral("copying inputs");
    if (line.exitCode)
        return QStringLiteral("exited %1").arg(*line.exitCode);
    return line.state;
}

bool isFailure(const NodeLine& line)
{
    return line.state == QLatin1String("connecting") || line.state == QLatin1String("vanished")
        || line.state == QLatin1String("unreachable") || (line.exitCode && *line.exitCode != 0);
}

} // namespace

NodeStateModel::NodeStateModel(QObject* parent)
    : QAbstractTableModel(parent)
{
}

int NodeStateModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int NodeStateModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant NodeStateModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const Row& row = m_rows[std::size_t(index.row())];
    if (role == Qt::ForegroundRole && row.failed && index.column() != Node)
        return QBrush(QColor(0xb4, 0x1e, 0x1e));
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    switch (index.column()) {
    case Node: return index.row();
    case Host: return row.host;
    case State: return row.state;
    case Detail: return row.detail;
    }
    return {};
}

QVariant NodeStateModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Node: return tr("Node");
    case Host: return tr("Host");
    case State: return tr("State");
    case Detail: return tr("Detail");
    }
    return {};
}

void NodeStateModel::reset(const QStringList& hosts)
{
    beginResetModel();
    m_rows.clear();
    for (const QString& host : hosts)
        m_rows.push_back(Row{host, kPreflight, tr("checking: host key, build, run config, inputs, disk, port"), false});
    m_runFolder.clear();
    m_problems.clear();
    m_listingProblems = false;
    endResetModel();
}

bool NodeStateModel::applyLine(const QString& line)
{
    if (const std::optional<NodeLine> node = parseNodeLine(line)) {
        m_listingProblems = false;
        setRow(node->node, node->host, shownState(*node), node->detail, isFailure(*node));
        if (node->node == 0 && !node->runFolder.isEmpty())
            m_runFolder = node->runFolder;
        return true;
    }
    if (isPreflightFailure(line)) {
        m_listingProblems = true;
        return true;
    }
    if (!m_listingProblems)
        return false;
    const std::optional<NodeProblem> problem = parseNodeProblem(line);
    if (!problem)
        return false;
    m_problems << problem->text;
    if (problem->node >= 0 && problem->node < rowCount()) {
        // A node with several problems lists them all, one a line.
        const Row& row = m_rows[std::size_t(problem->node)];
        const QString detail = row.state == kPreflightFailed && !row.detail.isEmpty()
                && !row.detail.contains(problem->text)
            ? row.detail + QLatin1Char('\n') + problem->text
            : problem->text;
        setRow(problem->node, row.host, kPreflightFailed, detail, true);
    }
    return true;
}

void NodeStateModel::launcherFinished(int exitCode)
{
    if (exitCode == 0)
        return;
    for (int node = 0; node < rowCount(); ++node) {
        const Row& row = m_rows[std::size_t(node)];
        if (row.state == kPreflight)
            setRow(node, row.host, tr("not checked"), tr("the launch ended before this node's check was reported"),
                false);
    }
}

QString NodeStateModel::state(int node) const
{
    return node >= 0 && node < rowCount() ? m_rows[std::size_t(node)].state : QString();
}

QString NodeStateModel::detail(int node) const
{
    return node >= 0 && node < rowCount() ? m_rows[std::size_t(node)].detail : QString();
}

void NodeStateModel::setRow(int node, const QString& host, const QString& state, const QString& detail, bool failed)
{
    if (node < 0)
        return;
    if (node >= rowCount()) {
        // A node the launch names that the page did not list: shown all the same.
        beginInsertRows({}, rowCount(), node);
        m_rows.resize(std::size_t(node) + 1, Row{QString(), kPreflight, QString(), false});
        endInsertRows();
    }
    m_rows[std::size_t(node)] = Row{host, state, detail, failed};
    emit dataChanged(index(node, 0), index(node, ColumnCount - 1));
}

} // namespace tb::ui
