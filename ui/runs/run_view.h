#pragma once

#include "metrics/event_stream_parser.h"
#include "metrics/run_history.h"

#include <QWidget>

class QLabel;
class QListWidget;
class QTabWidget;

namespace tb::ui {

class RunCharts;

// One followed run, as the Runs and Monitor pages show it: the summary
// line, the curves, and a tab of its warnings, errors and unreadable lines
// (pages add tabs of their own). It folds the lines a follower read into a
// metrics::RunHistory.
class RunView : public QWidget {
    Q_OBJECT

public:
    explicit RunView(QWidget* parent = nullptr);

    // Forgets the run: empty curves, no messages.
    void reset();
    void addLines(const QVector<tb::metrics::StreamItem>& items);
    // A line of the page's own (a stop sent or refused, a lost connection).
    void addNote(const QString& text);
    void setSummaryError(const QString& text);

    const metrics::RunHistory& history() const { return m_history; }
    RunCharts* charts() const { return m_charts; }
    QTabWidget* tabs() const { return m_tabs; }
    QString summaryText() const;
    QStringList messageTexts() const;

private:
    void show();

    metrics::RunHistory m_history;
    std::size_t m_messagesShown = 0;
    QLabel* m_summary = nullptr;
    RunCharts* m_charts = nullptr;
    QTabWidget* m_tabs = nullptr;
    QListWidget* m_messages = nullptr;
};

} // namespace tb::ui
