#pragma once

class QAbstractItemModel;
class QTableView;
class QWidget;

namespace tb::ui {

// The planner's read-only tables: whole-row selection, alternating rows,
// compact rows, no row numbers.
QTableView* makeResultTable(QWidget* parent, QAbstractItemModel* model);

} // namespace tb::ui
