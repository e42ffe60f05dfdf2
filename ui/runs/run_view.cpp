#include "runs/run_view.h"

#include "runs/preference_charts.h"
#include "runs/routing_charts.h"
#include "runs/run_charts.h"
#include "runs/run_summary.h"

#include <QLabel>
#include <QListWidget>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace tb::ui {

namespace {

const QString kErrorStyle = QStringLiteral("color: #b41e1e;");

QString messageLine(const metrics::RunMessage& message)
{
    return QStringLiteral("[%1, after step %2] %3")
        .arg(QString::fromStdString(message.level))
        .arg(message.afterStep)
        .arg(QString::fromStdString(message.text));
}

QColor messageColor(const std::string& level)
{
    if (level == "error" || level == "unreadable")
        return QColor(180, 30, 30);
    if (level == "warning")
        return QColor(160, 100, 0);
    return QColor();
}

} // namespace

RunView::RunView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_summary = new QLabel(this);
    m_summary->setTextFormat(Qt::PlainText); // the run's own strings
    m_summary->setObjectName(QStringLiteral("runSummary"));
    m_summary->setWordWrap(true);
    QFont bold = m_summary->font();
    bold.setBold(true);
    m_summary->setFont(bold);
    layout->addWidget(m_summary);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    m_chartsRow = new QSplitter(Qt::Horizontal, splitter);
    m_charts = new RunCharts(m_chartsRow);
    m_chartsRow->addWidget(m_charts);
    m_tabs = new QTabWidget(splitter);
    m_messages = new QListWidget(m_tabs);
    m_messages->setObjectName(QStringLiteral("runMessages"));
    m_tabs->addTab(m_messages, tr("Warnings and errors"));
    splitter->addWidget(m_chartsRow);
    splitter->addWidget(m_tabs);
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);
    layout->addWidget(splitter, 1);
}

void RunView::reset()
{
    m_history = metrics::RunHistory{};
    m_preference = metrics::PreferenceHistory{};
    m_messagesShown = 0;
    m_messagesHidden = 0;
    m_hiddenRow = nullptr;
    m_messages->clear();
    m_charts->clearCurves();
    delete m_routing; // the next run may be dense: no empty routing charts
    m_routing = nullptr;
    delete m_preferenceCharts; // nor a supervised one's empty DPO charts
    m_preferenceCharts = nullptr;
    show();
}

void RunView::addLines(const QVector<tb::metrics::StreamItem>& items)
{
    for (const metrics::StreamItem& item : items)
        metrics::foldStreamItem(item, m_history, m_preference);
    show();
}

void RunView::addNote(const QString& text)
{
    m_messages->addItem(text);
    trimMessages();
}

void RunView::setSummaryError(const QString& text)
{
    m_summary->setText(text);
    m_summary->setStyleSheet(kErrorStyle);
}

void RunView::show()
{
    m_charts->showHistory(m_history);
    if (m_history.hasExpertRouting() && !m_routing) {
        m_routing = new RoutingCharts(m_chartsRow);
        showBeside(m_routing);
    }
    if (m_routing)
        m_routing->showHistory(m_history);
    if (m_preference.any() && !m_preferenceCharts) {
        m_preferenceCharts = new PreferenceCharts(m_chartsRow);
        showBeside(m_preferenceCharts);
    }
    if (m_preferenceCharts)
        m_preferenceCharts->showHistory(m_history, m_preference);
    m_summary->setStyleSheet(
        runState(m_history) == QStringLiteral("failed") ? kErrorStyle : QString());
    m_summary->setText(describeRun(m_history));
    const std::deque<metrics::RunMessage>& messages = m_history.messages();
    const uint64_t first = m_history.droppedMessages(); // the number of messages[0]
    if (m_messagesShown < first) { // let go by the history before they were listed
        m_messagesHidden += first - m_messagesShown;
        m_messagesShown = first;
    }
    for (; m_messagesShown < first + messages.size(); ++m_messagesShown) {
        const metrics::RunMessage& message = messages[std::size_t(m_messagesShown - first)];
        auto* item = new QListWidgetItem(messageLine(message), m_messages);
        if (const QColor color = messageColor(message.level); color.isValid())
            item->setForeground(color);
    }
    trimMessages();
}

// Another family's charts to the right of the run's curves, which keep the
// wider part: they are what the page is for.
void RunView::showBeside(QWidget* charts)
{
    m_chartsRow->addWidget(charts);
    charts->show(); // before the sizes: showing a child makes the splitter share anew
    const int width = std::max(m_chartsRow->width(), 1000);
    QList<int> sizes(m_chartsRow->count(), width * 2 / 5 / std::max(m_chartsRow->count() - 1, 1));
    sizes.front() = width * 3 / 5;
    m_chartsRow->setSizes(sizes);
}

// The latest kMaxMessageRows rows stay; a first row counts the others.
void RunView::trimMessages()
{
    const int header = m_hiddenRow ? 1 : 0;
    for (int over = m_messages->count() - header - kMaxMessageRows; over > 0; --over) {
        delete m_messages->takeItem(header);
        ++m_messagesHidden;
    }
    if (m_messagesHidden == 0)
        return;
    if (!m_hiddenRow) {
        m_hiddenRow = new QListWidgetItem;
        m_messages->insertItem(0, m_hiddenRow);
    }
    m_hiddenRow->setText(tr("... and %1 earlier message(s), not shown").arg(m_messagesHidden));
}

QString RunView::summaryText() const
{
    return m_summary->text();
}

QStringList RunView::messageTexts() const
{
    QStringList texts;
    for (int row = 0; row < m_messages->count(); ++row)
        texts << m_messages->item(row)->text();
    return texts;
}

} // namespace tb::ui
