#include "compare/background_decimator.h"

namespace tb::ui {

namespace {

const QString kJob = QStringLiteral("decimate");

// A job's answer: nothing when it was stopped.
using Decimated = std::shared_ptr<const std::vector<DecimatedCurve>>;

} // namespace

BackgroundDecimator::BackgroundDecimator(QObject* parent)
    : QObject(parent)
{
}

BackgroundDecimator::~BackgroundDecimator()
{
    stopRunning();
    m_jobs.waitForAll();
}

void BackgroundDecimator::stopRunning()
{
    if (m_cancel)
        m_cancel->store(true);
    m_cancel.reset();
}

void BackgroundDecimator::cancel()
{
    stopRunning();
    m_running.reset();
}

void BackgroundDecimator::request(const DecimationRequest& request)
{
    if (m_running && *m_running == request)
        return;
    stopRunning();
    m_running = request;
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    m_cancel = cancelled;
    // The job holds its own references: the curves, its flag, the counter.
    auto work = [request, cancelled, stopped = m_stopped]() -> Decimated {
        auto curves = decimatedCurves(*request.curves, request.range.lower, request.range.upper, request.columns,
            cancelled.get());
        if (!curves) {
            ++*stopped;
            return nullptr;
        }
        return std::make_shared<const std::vector<DecimatedCurve>>(std::move(*curves));
    };
    // JobRunner drops the answers of every job but the latest.
    m_jobs.run(kJob, std::move(work), [this, request](const Decimated& curves) {
        if (!curves || !m_running || !(*m_running == request))
            return; // stopped, or cancel() came after it finished
        m_running.reset();
        m_cancel.reset();
        emit decimated(request, *curves);
    });
}

} // namespace tb::ui
