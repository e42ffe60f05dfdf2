#include "compare/compare_follower.h"

#include "config/config_loader.h"
#include "launch/run_prediction.h"
#include "plan/cpu_device.h"

#include <QTimer>

#include <set>
#include <utility>

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
    m_curves.clear();
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
    m_pickedChanged = true; // a run unticked changes nothing read, but what is drawn
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
    bool pickedChanged = std::exchange(m_pickedChanged, false);
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
    run.history =
        std::make_shared<const metrics::RunHistory>(history ? *history : metrics::RunHistory{});
    for (const auto& [rank, rankHistory] : m_catalog.rankHistories(dir))
        run.ranks.emplaceBack(rank, std::make_shared<const metrics::RunHistory>(*rankHistory));
    run.predictedCurve = predictedCurve(dir, *run.history);
    if (const metrics::PreferenceHistory* preference = m_catalog.preference(dir);
        preference && preference->any())
        run.preference = std::make_shared<const metrics::PreferenceHistory>(*preference);
    m_snapshots[dir] = run;
    return run;
}

QVector<QPair<int, double>> CompareFollower::predictedCurve(
    const std::string& dir, const metrics::RunHistory& history)
{
    if (const auto cached = m_curves.find(dir); cached != m_curves.end())
        return cached->second;
    if (!history.start() || !history.start()->prediction)
        return {};
    // The resolved config, JSON being YAML, with absolute paths.
    const config::LoadReport loaded = config::parseRunConfig(history.start()->config.dump());
    const std::string& gpu = history.start()->prediction->gpu;
    const std::string deviceId = gpu.empty() ? plan::kCpuDeviceId : gpu;
    QVector<QPair<int, double>> curve;
    for (int ranks = 1; loaded.ok() && ranks <= kPredictedRanks; ++ranks) {
        const common::Result<metrics::RunPrediction> prediction =
            launch::predictRun(*loaded.config, ranks, 1, deviceId);
        if (prediction && prediction->tokensPerSecond > 0)
            curve.emplaceBack(ranks, prediction->tokensPerSecond);
    }
    m_curves[dir] = curve;
    return curve;
}

} // namespace tb::ui
