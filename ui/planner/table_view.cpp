#include "planner/table_view.h"

#include <QHeaderView>
#include <QTableView>

namespace tb::ui {

QTableView* makeResultTable(QWidget* parent, QAbstractItemModel* model)
{
    auto* view = new QTableView(parent);
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->setAlternatingRowColors(true);
    view->verticalHeader()->setVisible(false);
    view->verticalHeader()->setDefaultSectionSize(22);
    view->horizontalHeader()->setHighlightSections(false);
    view->setWordWrap(false);
    return view;
}

} // namespace tb::ui
