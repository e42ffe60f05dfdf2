#include "compare/background_decimator.h"

#include <utility>

namespace tb::ui {

namespace {

const QString kDecimateJob = QStringLiteral("decimate");
const QString kBuildJob = QStringLiteral("build");

// A job's answer: nothing when it was stopped.
using Decimated = std::shared_ptr<const std::vector<DecimatedCurve>>;
struct Built {
    QVector<ComparedRun> runs;
    DecimationRequest request;
    Decimated curves;
};

Built builtCurves(const CurveBuild& build, const std::atomic<bool>* cancelled)
{
    auto curves = build.make(build.runs, cancelled);
    if (!curves)
        return {};
    auto shared = std::make_shared<const std::vector<CurveSeries>>(std::move(*curves));
    const QCPRange range = keyRangeOf(*shared, build.fallback);
    auto decimated = decimatedCurves(*shared, range.lower, range.upper, build.columns, cancelled);
    if (!decimated)
        return {};
    return {build.runs, {shared, range, build.columns},
        std::make_shared<const std::vector<DecimatedCurve>>(std::move(*decimated))};
}

} // namespace

BackgroundDecimator::BackgroundDecimator(QObject* parent)
    : QObject(parent)
{
}

BackgroundDecimator::~BackgroundDecimator()
{
    stop(m_cancel);
    stop(m_cancelBuild);
    m_jobs.waitForAll();
}

void BackgroundDecimator::stop(StopFlag& flag)
{
    if (flag)
        flag->store(true);
    flag.reset();
}

void BackgroundDecimator::cancel()
{
    stop(m_cancel);
    m_running.reset();
}

void BackgroundDecimator::cancelBuild()
{
    stop(m_cancelBuild);
    m_building.reset();
    m_nextBuild.reset();
}

void BackgroundDecimator::request(const DecimationRequest& request)
{
    if (m_running && *m_running == request)
        return;
    stop(m_cancel);
    m_running = request;
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    m_cancel = cancelled;
    // The job holds its own references: the curves, its flag, the counter.
    auto work = [request, cancelled, stopped = m_stopped]() -> Decimated {
        auto curves = decimatedCurves(*request.curves, request.range.lower, request.range.upper,
            request.columns, cancelled.get());
        if (!curves) {
            ++*stopped;
            return nullptr;
        }
        return std::make_shared<const std::vector<DecimatedCurve>>(std::move(*curves));
    };
    // JobRunner drops the answers of every job but the latest.
    m_jobs.run(kDecimateJob, std::move(work), [this, request](const Decimated& curves) {
        if (!curves || !m_running || !(*m_running == request))
            return; // stopped, or cancel() came after it finished
        m_running.reset();
        m_cancel.reset();
        emit decimated(request, *curves);
    });
}

void BackgroundDecimator::build(CurveBuild build)
{
    // Stopping the build running for this one would starve the curves of
    // a run growing faster than they are built.
    if (m_building) {
        m_coalesced += m_nextBuild.has_value();
        m_nextBuild = std::move(build);
        return;
    }
    startBuild(std::move(build));
}

void BackgroundDecimator::startBuild(CurveBuild build)
{
    const quint64 id = ++m_builds;
    m_building = id;
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    m_cancelBuild = cancelled;
    auto work = [build = std::move(build), cancelled, stopped = m_stopped,
                    hook = m_buildHook]() -> Built {
        if (hook)
            hook();
        Built built = builtCurves(build, cancelled.get());
        if (!built.curves)
            ++*stopped;
        return built;
    };
    m_jobs.run(kBuildJob, std::move(work), [this, id](const Built& done) {
        if (!done.curves || m_building != id)
            return; // stopped, or cancelBuild() came after it finished
        m_building.reset();
        m_cancelBuild.reset();
        // The next build runs while the UI thread takes this one's curves.
        if (m_nextBuild) {
            CurveBuild next = std::move(*m_nextBuild);
            m_nextBuild.reset();
            startBuild(std::move(next));
        }
        emit built(done.runs, done.request, *done.curves);
    });
}

} // namespace tb::ui
