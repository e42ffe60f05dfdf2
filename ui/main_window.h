#pragma once

#include <QMainWindow>

class QListWidget;
class QStackedWidget;

namespace tb::ui {

// The workbench window: a page list on the left (Planner, Runs, Monitor,
// Hosts) and the current page on the right. It only wires pages together;
// each page is its own widget in ui/pages/.
class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Page ids in display order: "planner", "runs", "monitor", "hosts".
    QStringList pageIds() const;
    QString currentPageId() const;
    QWidget* page(const QString& id) const;
    void showPage(const QString& id);

public slots:
    void showAbout();

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void addPage(const QString& id, const QString& title, const QString& iconPath, QWidget* page);
    void createMenus();
    void restoreWindowState();
    void saveWindowState();

    QListWidget* m_navigation = nullptr;
    QStackedWidget* m_pages = nullptr;
    QStringList m_pageIds;
};

} // namespace tb::ui
