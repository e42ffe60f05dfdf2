#pragma once

#include "remote/launcher_status.h"

#include <QAbstractTableModel>
#include <QStringList>

#include <vector>

namespace tb::ui {

// The nodes of a multi-node run, one row each in node-rank order, fed from
// the status lines `tunebench-cli launch --hostfile --status-json` writes
// (remote/launcher_status.h): preflight (until the launch says how each
// host's check went), preflight failed with its problems, copying inputs
// (--sync), starting, running, unreachable, exited with its code, vanished.
class NodeStateModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Node, Host, State, Detail, ColumnCount };

    explicit NodeStateModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // A new launch: every host of its hostfile, node 0 first, in preflight.
    void reset(const QStringList& hosts);
    // One status of the launcher; false when it says nothing of a node.
    bool apply(const remote::LauncherStatus& status);
    // The launcher ended: a failed launch leaves no row in "preflight".
    void launcherFinished(int exitCode);

    QString state(int node) const;
    QString detail(int node) const;
    // Rank 0's run folder, once node 0's "running" status named it.
    QString runFolder() const { return m_runFolder; }
    // The problems the preflight listed, each naming its host.
    QStringList problems() const { return m_problems; }

private:
    QString displayText(int row, int column) const;
    struct Row {
        QString host;
        QString state;
        QString detail;
        bool failed = false;
    };
    void setRow(
        int node, const QString& host, const QString& state, const QString& detail, bool failed);

    std::vector<Row> m_rows;
    QString m_runFolder;
    QStringList m_problems;
};

} // namespace tb::ui
