#include "main_window.h"

#include "about_dialog.h"
#include "app_settings.h"
#include "compare/compare_page.h"
#include "pages/not_built_page.h"
#include "runs/runs_page.h"
#ifdef TB_HAVE_SSH
#include "hosts/hosts_page.h"
#include "monitor/monitor_page.h"
#endif
#include "planner/planner_page.h"

#include <QApplication>
#include <QCloseEvent>
#include <QHBoxLayout>
#include <QListWidget>
#include <QMenuBar>
#include <QStackedWidget>
#include <QStatusBar>

// Resources compiled into a static library are dropped by the linker unless
// something references them; this does, once, outside any namespace as Qt asks.
static void initTunebenchResources()
{
    Q_INIT_RESOURCE(tunebench);
}

namespace tb::ui {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
{
    initTunebenchResources();
    setWindowTitle(tr("Tunebench"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/tunebench.svg")));

    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    m_navigation = new QListWidget(central);
    m_navigation->setObjectName(QStringLiteral("pageNavigation"));
    m_navigation->setIconSize(QSize(28, 28));
    m_navigation->setFixedWidth(150);
    m_navigation->setSpacing(2);
    m_pages = new QStackedWidget(central);
    layout->addWidget(m_navigation);
    layout->addWidget(m_pages, 1);
    setCentralWidget(central);

    addPage(QStringLiteral("planner"), tr("Planner"), QStringLiteral(":/icons/planner.svg"),
        new PlannerPage);
    auto* runs = new RunsPage;
#ifdef TB_HAVE_SSH
    // One inventory of machines: the Runs page picks a multi-node run's hosts from it.
    auto* hosts = new HostsPage;
    runs->setHostInventory(hosts->model());
#endif
    addPage(QStringLiteral("runs"), tr("Runs"), QStringLiteral(":/icons/runs.svg"), runs);
    auto* compare = new ComparePage;
    connect(compare, &ComparePage::statusMessage, this,
        [this](const QString& text) { statusBar()->showMessage(text); });
    addPage(
        QStringLiteral("compare"), tr("Compare"), QStringLiteral(":/icons/compare.svg"), compare);
    addPage(QStringLiteral("monitor"), tr("Monitor"), QStringLiteral(":/icons/monitor.svg"),
#ifdef TB_HAVE_SSH
        new MonitorPage);
#else
        new NotBuiltPage(tr("Monitor"),
            tr("Attach over SSH to a run started earlier, follow it, stop it."),
            tr("a build with SSH (TUNEBENCH_SSH and libssh)")));
#endif
    addPage(QStringLiteral("hosts"), tr("Hosts"), QStringLiteral(":/icons/hosts.svg"),
#ifdef TB_HAVE_SSH
        hosts);
#else
        new NotBuiltPage(tr("Hosts"),
            tr("The machines Tunebench can reach over SSH, their GPUs and what "
               "runs on them."),
            tr("a build with SSH (TUNEBENCH_SSH and libssh)")));
#endif

    connect(
        m_navigation, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);
    createMenus();
    statusBar()->showMessage(tr("Ready"));
    restoreWindowState();
}

MainWindow::~MainWindow() = default;

void MainWindow::addPage(
    const QString& id, const QString& title, const QString& iconPath, QWidget* page)
{
    page->setObjectName(id + QStringLiteral("Page"));
    auto* item = new QListWidgetItem(QIcon(iconPath), title, m_navigation);
    item->setSizeHint(QSize(140, 44));
    m_pages->addWidget(page);
    m_pageIds.append(id);
}

void MainWindow::createMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_pageIds.size(); ++i) {
        QAction* action = view->addAction(
            m_navigation->item(i)->text(), this, [this, i] { m_navigation->setCurrentRow(i); });
        action->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    }
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Tunebench"), this, &MainWindow::showAbout);
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

QStringList MainWindow::pageIds() const
{
    return m_pageIds;
}

QString MainWindow::currentPageId() const
{
    const int row = m_navigation->currentRow();
    return row >= 0 && row < m_pageIds.size() ? m_pageIds.at(row) : QString();
}

QWidget* MainWindow::page(const QString& id) const
{
    const int index = m_pageIds.indexOf(id);
    return index >= 0 ? m_pages->widget(index) : nullptr;
}

void MainWindow::showPage(const QString& id)
{
    const int index = m_pageIds.indexOf(id);
    if (index >= 0)
        m_navigation->setCurrentRow(index);
}

void MainWindow::showAbout()
{
    AboutDialog dialog(this);
    dialog.exec();
}

void MainWindow::restoreWindowState()
{
    AppSettings settings;
    resize(1280, 800);
    if (settings.value(settings::windowStateVersion) == settings::kWindowStateVersion) {
        restoreGeometry(settings.value(settings::windowGeometry));
        restoreState(settings.value(settings::windowState), settings::kWindowStateVersion);
    }
    const int row = m_pageIds.indexOf(settings.value(settings::currentPage));
    m_navigation->setCurrentRow(row >= 0 ? row : 0);
}

void MainWindow::saveWindowState()
{
    AppSettings settings;
    settings.setValue(settings::windowGeometry, saveGeometry());
    settings.setValue(settings::windowState, saveState(settings::kWindowStateVersion));
    settings.setValue(settings::windowStateVersion, settings::kWindowStateVersion);
    settings.setValue(settings::currentPage, currentPageId());
    settings.sync();
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    saveWindowState();
    event->accept();
}

} // namespace tb::ui
