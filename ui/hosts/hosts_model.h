#pragma once

#include "remote/host_probe.h"
#include "remote/ssh_target.h"

#include <QAbstractTableModel>

#include <optional>
#include <vector>

namespace tb::ui {

// The machines on the Hosts page, one row each: this machine first, then
// the SSH hosts the user added, with what their last probe found.
class HostsModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Host, Cpus, Memory, Gpus, Trainers, Status, ColumnCount };

    struct Entry {
        std::optional<remote::SshTarget> target; // empty: this machine
        bool probing = false;
        std::optional<remote::HostFacts> facts;
        QString error;
    };

    explicit HostsModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // False when the same user@host:port is already listed.
    bool addHost(const remote::SshTarget& target);
    void removeRow(int row);
    const std::vector<Entry>& entries() const { return m_entries; }

    void setProbing(int row);
    void setResult(int row, const common::Result<remote::HostFacts>& result);

    // "user@host:port", or "this machine".
    static QString label(const Entry& entry);

private:
    QString cellText(const Entry& entry, int column) const;

    std::vector<Entry> m_entries;
};

} // namespace tb::ui
