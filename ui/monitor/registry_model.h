#pragma once

#include "launch/run_registry.h"

#include <QAbstractTableModel>

#include <vector>

namespace tb::ui {

// A host's run registry (launch/run_registry.h), a row per node's part of a
// run, newest first: what `tunebench-cli monitor --host H` lists.
class RegistryModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Run, Node, State, Pid, Started, Folder, ColumnCount };

    explicit RegistryModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    void setEntries(std::vector<launch::RegistryEntry> entries);
    const std::vector<launch::RegistryEntry>& entries() const { return m_entries; }

private:
    std::vector<launch::RegistryEntry> m_entries;
};

} // namespace tb::ui
