#include "runs/node_state_model.h"
#include "qs.h"

#include "plain_tooltip.h"

#include "common/units.h"

#include <QBrush>
#include <QColor>

namespace tb::ui {

namespace {

const QString kPreflight = QStringLiteral("preflight");
const QString kPreflightFailed = QStringLiteral("preflight failed");

using remote::NodeState;

// What a node's state means to someone watching the nodes.
QString shownState(const remote::NodeUpdate& update)
{
    switch (update.state) {
    case NodeState::Checked:
        return QStringLiteral("preflight passed");
    case NodeState::CheckFailed:
        return kPreflightFailed;
    case NodeState::Exited:
        return QStringLiteral("exited %1").arg(update.exitCode.value_or(-1));
    default:
        return qs(std::string(remote::toString(update.state)));
    }
}

bool isFailure(const remote::NodeUpdate& update)
{
    return update.state == NodeState::CheckFailed || update.state == NodeState::Vanished
        || update.state == NodeState::Unreachable || (update.exitCode && *update.exitCode != 0);
}

// A failed check lists every problem the node had, one a line.
QString shownDetail(const remote::NodeUpdate& update)
{
    if (update.problems.empty())
        return qs(update.detail);
    QStringList lines;
    for (const std::string& problem : update.problems)
        lines << qs(problem);
    return lines.join(QLatin1Char('\n'));
}

QString transferText(const remote::TransferProgress& p)
{
    const double percent = p.bytes ? 100.0 * double(p.bytesDone) / double(p.bytes) : 100.0;
    return QStringLiteral("%1% of %2  %3")
        .arg(percent, 0, 'f', 1)
        .arg(qs(common::formatBytes(double(p.bytes))), qs(p.path));
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
    if (role == Qt::DisplayRole)
        return displayText(index.row(), index.column());
    // The host's own words (its launcher's summary, a rank's last error):
    // never taken for HTML.
    if (role == Qt::ToolTipRole)
        return plainToolTip(displayText(index.row(), index.column()));
    return {};
}

QString NodeStateModel::displayText(int row, int column) const
{
    const Row& node = m_rows[std::size_t(row)];
    switch (column) {
    case Node:
        return QString::number(row);
    case Host:
        return node.host;
    case State:
        return node.state;
    case Detail:
        return node.detail;
    }
    return {};
}

QVariant NodeStateModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Node:
        return tr("Node");
    case Host:
        return tr("Host");
    case State:
        return tr("State");
    case Detail:
        return tr("Detail");
    }
    return {};
}

void NodeStateModel::reset(const QStringList& hosts)
{
    beginResetModel();
    m_rows.clear();
    for (const QString& host : hosts)
        m_rows.push_back(Row{host, kPreflight,
            tr("checking: host key, build, run config, inputs, disk, port"), false});
    m_runFolder.clear();
    m_problems.clear();
    endResetModel();
}

bool NodeStateModel::apply(const remote::LauncherStatus& status)
{
    using Type = remote::LauncherStatus::Type;
    switch (status.type) {
    case Type::Node: {
        const remote::NodeUpdate& update = status.node;
        setRow(update.node, qs(update.host), shownState(update), shownDetail(update),
            isFailure(update));
        if (update.node == 0 && !update.runFolder.empty())
            m_runFolder = qs(update.runFolder);
        return true;
    }
    case Type::Transfer:
        setRow(status.transferNode, qs(status.transferHost), QStringLiteral("copying inputs"),
            transferText(status.transfer), false);
        return true;
    case Type::PreflightFailed:
        m_problems.clear();
        for (const std::string& problem : status.problems)
            m_problems << qs(problem);
        return true;
    case Type::Note:
    case Type::End:
        return false;
    }
    return false;
}

void NodeStateModel::launcherFinished(int exitCode)
{
    if (exitCode == 0)
        return;
    for (int node = 0; node < rowCount(); ++node) {
        const Row& row = m_rows[std::size_t(node)];
        if (row.state == kPreflight)
            setRow(node, row.host, tr("not checked"),
                tr("the launch ended before this node's check was reported"), false);
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

void NodeStateModel::setRow(
    int node, const QString& host, const QString& state, const QString& detail, bool failed)
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
