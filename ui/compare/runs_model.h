#pragma once

#include "metrics/run_catalog.h"

#include <QAbstractTableModel>
#include <QSet>
#include <QVector>

namespace tb::ui {

// The runs list: one row per run folder, a check box in the first column to
// pick it for comparison. Numbers sort by value (kSortRole), not by text.
class RunsModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        Name,
        Model,
        Method,
        Ranks,
        State,
        Steps,
        Loss,
        TokensPerSecond,
        Started,
        Duration,
        ColumnCount
    };
    static constexpr int kSortRole = Qt::UserRole;
    static constexpr int kDirRole = Qt::UserRole + 1;

    explicit RunsModel(QObject* parent = nullptr);

    // Rows keep their check marks across updates (by folder).
    void setRuns(const QVector<metrics::RunEntry>& runs);
    const QVector<metrics::RunEntry>& runs() const { return m_runs; }

    // Picked folders, in the order they were picked.
    QStringList pickedDirs() const { return m_picked; }
    void setPicked(const QString& dir, bool picked);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

signals:
    void pickedChanged(const QStringList& dirs);

private:
    QVariant display(const metrics::RunEntry& run, int column) const;
    QVariant sortKey(const metrics::RunEntry& run, int column) const;
    int rowOf(const QString& dir) const;

    QVector<metrics::RunEntry> m_runs;
    QStringList m_picked;
};

} // namespace tb::ui
