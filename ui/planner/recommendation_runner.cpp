#include "planner/recommendation_runner.h"

#include <QMetaObject>
#include <QPointer>

namespace tb::ui {

RecommendationRunner::RecommendationRunner(
    std::shared_ptr<const plan::Catalog> catalog, QObject* parent)
    : QObject(parent)
    , m_catalog(std::move(catalog))
    , m_jobs(new JobRunner(this))
{
}

RecommendationRunner::~RecommendationRunner()
{
    // No sweep outlives its runner, the cancelled ones included (they stop
    // at the next VM size).
    cancel();
    m_jobs->waitForAll();
}

void RecommendationRunner::start(const plan::PlanInput& input, const model::ModelSpec& model,
    const plan::RecommendOptions& options)
{
    cancel();
    auto cancelFlag = std::make_shared<std::atomic<bool>>(false);
    m_cancelFlag = cancelFlag;
    const quint64 generation = ++m_generation;

    QPointer<RecommendationRunner> self(this);
    const auto progress = [cancelFlag, self, generation](int done, int total) {
        if (self)
            QMetaObject::invokeMethod(
                self.data(),
                [self, generation, done, total] {
                    if (self && self->m_generation == generation)
                        emit self->progressed(done, total);
                },
                Qt::QueuedConnection);
        return !cancelFlag->load();
    };
    // A cancelled sweep still finishing reports nothing: the runner drops it.
    m_jobs->run(
        QStringLiteral("recommend"),
        [input, model, catalog = m_catalog, options, progress] {
            return plan::recommend(input, model, *catalog, options, progress);
        },
        [this](const plan::Recommendation& result) {
            if (!result.cancelled)
                emit finished(result);
        });
}

void RecommendationRunner::cancel()
{
    if (m_cancelFlag)
        m_cancelFlag->store(true);
}

bool RecommendationRunner::isRunning() const
{
    return m_jobs->isRunning();
}

} // namespace tb::ui
