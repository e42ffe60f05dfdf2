#pragma once

#include "plan/recommender.h"

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

namespace tb::ui {

// The recommender's ranked options as a table; the Rank column keeps its
// order (cost in 1 % bands, then fewer nodes). Qt::DisplayRole is the text a
// user reads; kSortRole the raw number, so sorting by cost or tokens/s is
// numeric, not alphabetical.
class RecommendationModel : public QAbstractTableModel {
    Q_OBJECT

public:
    // Cost and time first after the setup: what a user compares; the table
    // must not need scrolling to show them.
    // Trainer: whether Tunebench's own trainer runs on the option's GPUs.
    enum Column {
        Rank,
        VmSize,
        Gpus,
        Nodes,
        Strategy,
        Cost,
        Hours,
        TokensPerSecond,
        MemoryUsed,
        Fits,
        Trainer,
        ColumnCount
    };
    static constexpr int kSortRole = Qt::UserRole + 1;

    using QAbstractTableModel::QAbstractTableModel;

    void setRecommendation(const plan::Recommendation& recommendation);
    const plan::RecommendedOption* option(int row) const;
    // The recommender ranks best first: the first row of each VM size is
    // that size's best option.
    bool isBestForVmSize(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<plan::RecommendedOption> m_options;
    std::vector<bool> m_bestForVmSize;
};

// Filters for the table: at most N nodes, a time budget and a price limit
// (0: no limit), each VM size's best option only, and only what Tunebench's
// own trainer runs on. Sorting uses the source's kSortRole.
class RecommendationFilterModel : public QSortFilterProxyModel {
    Q_OBJECT

public:
    explicit RecommendationFilterModel(QObject* parent = nullptr);

    void setMaxNodes(int nodes);
    void setMaxHours(double hours);
    void setMaxCostUsd(double usd);
    void setBestPerVmSizeOnly(bool only);
    void setTrainerRunnableOnly(bool only);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    int m_maxNodes = 0;
    double m_maxHours = 0;
    double m_maxCostUsd = 0;
    bool m_bestPerVmSizeOnly = false;
    bool m_trainerRunnableOnly = false;
};

// Options the recommender turned down, with the reason.
class RejectedModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { VmSize, Strategy, Nodes, Reason, Detail, ColumnCount };

    using QAbstractTableModel::QAbstractTableModel;

    void setRejected(const std::vector<plan::RejectedOption>& rejected);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<plan::RejectedOption> m_rejected;
};

} // namespace tb::ui
