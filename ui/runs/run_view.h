#pragma once

#include "metrics/event_stream_parser.h"
#include "metrics/preference_steps.h"
#include "metrics/run_history.h"

#include <QWidget>

class QLabel;
class QListWidget;
class QListWidgetItem;
class QSplitter;
class QTabWidget;

namespace tb::ui {

class PreferenceCharts;
class RunCharts;
class RoutingCharts;

// One followed run, as the Runs and Monitor pages show it: the summary
// line, the curves (beside them a mixture of experts' routing, or a DPO
// run's preference figures, once a step reports them), and a tab of its
// warnings, errors and unreadable lines (pages add tabs of their own). It
// folds the lines a follower read into a metrics::RunHistory and the DPO
// figures beside it.
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
    const metrics::PreferenceHistory& preference() const { return m_preference; }
    RunCharts* charts() const { return m_charts; }
    // Null until a step of the run carries expert_tokens.
    RoutingCharts* routingCharts() const { return m_routing; }
    // Null until a step of the run carries a dpo object.
    PreferenceCharts* preferenceCharts() const { return m_preferenceCharts; }
    QTabWidget* tabs() const { return m_tabs; }
    QString summaryText() const;
    QStringList messageTexts() const;

    // Rows of the run's messages the list keeps (the latest), besides a
    // first row that counts the earlier ones; each row is at most
    // RunHistory::kMaxMessageBytes of the message.
    static constexpr int kMaxMessageRows = int(metrics::RunHistory::kMaxMessages);

private:
    void show();
    void showBeside(QWidget* charts);
    void trimMessages();

    metrics::RunHistory m_history;
    metrics::PreferenceHistory m_preference;
    uint64_t m_messagesShown = 0; // the run's messages listed or let go, counted from its first
    uint64_t m_messagesHidden = 0; // of those, not in the list
    QListWidgetItem* m_hiddenRow = nullptr; // "... and N earlier messages", once there are such
    QLabel* m_summary = nullptr;
    RunCharts* m_charts = nullptr;
    QSplitter* m_chartsRow = nullptr;
    RoutingCharts* m_routing = nullptr;
    PreferenceCharts* m_preferenceCharts = nullptr;
    QTabWidget* m_tabs = nullptr;
    QListWidget* m_messages = nullptr;
};

} // namespace tb::ui
