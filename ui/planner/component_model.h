#pragma once

#include "plan/plan_result.h"

#include <QAbstractTableModel>
#include <QColor>

namespace tb::ui {

// Every term of the per-GPU peak and every throughput figure, each with the
// planner's explanation and source: the page's "show your working".
class ComponentModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { Name, Value, Explanation, Source, ColumnCount };

    using QAbstractTableModel::QAbstractTableModel;

    void setResult(const plan::PlanResult& result);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    struct Row {
        QString name;
        QString value;
        QString explanation;
        QString source;
        QColor color; // invalid for figures
    };
    std::vector<Row> m_rows;
};

} // namespace tb::ui
