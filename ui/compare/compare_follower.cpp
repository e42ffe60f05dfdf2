#include "compare/compare_follower.h"

#include <QTimer>

#include <set>

namespace tb::ui {

namespace {

QVector<metrics::RunEntry> entriesOf(const metrics::LiveCatalog& catalog)
{
    const std::vector<metrics::RunEntry> entries = catalog.entries();
    return QVector<metrics::RunEntry>(entries.begin(), entries.end());
}

} // namespace

CompareFollower::CompareFollower(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<QVector<tb::metrics::RunEntry>>();
    qRegisterMetaType<QVector<tb::ui::ComparedRun>>();
}

CompareFollower::~CompareFollower() = default;

void CompareFollower::ensureTimer()
{
    // Made here, so it lives on this object's thread.
    if (m_timer)
        return;
    m_timer = new QTimer(this);
    m_timer->setInterval(kPollMilliseconds);
    connect(m_timer, &QTimer::timeout, this, &CompareFollower::poll);
    m_timer->start();
}

void CompareFollower::setRoot(const QString& root)
{
    m_catalog.setRoot(root.toStdString());
    m_snapshots.clear();
    ensureTimer();
    poll();
}

void CompareFollower::addRun(const QString& dir)
{
    m_catalog.addRun(dir.toStdString());
    ensureTimer();
    poll();
}

void CompareFollower::setPicked(const QStringList& dirs)
{
    m_picked = dirs;
    std::set<std::string> picked;
    for (const QString& dir : dirs)
        picked.insert(dir.toStdString());
    m_catalog.setRanksRead(picked);
    std::erase_if(m_snapshots, [&](const auto& item) { return !picked.contains(item.first); });
    ensureTimer();
    poll();
}

void CompareFollower::stop()
{
    if (m_timer)
        m_timer->stop();
}

void CompareFollower::poll()
{
    const std::set<std::string> changed = m_catalog.refresh();
    if (!changed.empty())
        emit catalogRead(entriesOf(m_catalog));
    bool pickedChanged = false;
    QVector<ComparedRun> runs;
    for (const QString& dir : m_picked) {
        const std::string key = dir.toStdString();
        const bool fresh = changed.contains(key) || !m_snapshots.contains(key);
        pickedChanged = pickedChanged || fresh;
        runs.append(snapshot(key, fresh));
    }
    if (pickedChanged)
        emit runsRead(runs);
}

ComparedRun CompareFollower::snapshot(const std::string& dir, bool changed)
{
    if (!changed)
        return m_snapshots.at(dir);
    ComparedRun run;
    run.dir = QString::fromStdString(dir);
    const metrics::RunHistory* history = m_catalog.history(dir);
    run.history = std::make_shared<const metrics::RunHistory>(history ? *history : metrics::RunHistory{});
    for (const auto& [rank, rankHistory] : m_catalog.rankHistories(dir))
        run.ranks.append({rank, std::make_shared<const metrics::RunHistory>(*rankHistory)});
    m_snapshots[dir] = run;
    return run;
}

} // namespace tb::ui
