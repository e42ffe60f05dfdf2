#include "planner/recommendation_runner.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace tb::ui {

RecommendationRunner::RecommendationRunner(const plan::Catalog& catalog, QObject* parent)
    : QObject(parent)
    , m_catalog(catalog)
{
}

RecommendationRunner::~RecommendationRunner()
{
    // Sweeps read the catalog, which dies with the page: wait for every one,
    // the cancelled ones included (they stop at the next VM size).
    cancel();
    for (QFutureWatcherBase* watcher : findChildren<QFutureWatcherBase*>())
        watcher->waitForFinished();
}

void RecommendationRunner::start(const plan::PlanInput& input, const model::ModelSpec& model,
                                 const plan::RecommendOptions& options)
{
    cancel();
    auto cancelFlag = std::make_shared<std::atomic<bool>>(false);
    m_cancelFlag = cancelFlag;
    const quint64 generation = ++m_generation;

    // The old watcher may still be finishing a cancelled sweep: let it go
    // and delete itself, so it can never report into the new one.
    if (m_watcher) {
        m_watcher->disconnect(this);
        connect(m_watcher, &QFutureWatcherBase::finished, m_watcher, &QObject::deleteLater);
        if (m_watcher->isFinished())
            m_watcher->deleteLater();
    }
    m_watcher = new QFutureWatcher<plan::Recommendation>(this);
    QPointer<RecommendationRunner> self(this);
    const plan::Catalog* catalog = &m_catalog;
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
    connect(m_watcher, &QFutureWatcherBase::finished, this, [this, generation] {
        if (generation != m_generation || !m_watcher)
            return;
        const plan::Recommendation result = m_watcher->result();
        if (!result.cancelled)
            emit finished(result);
    });
    m_watcher->setFuture(QtConcurrent::run([input, model, catalog, options, progress] {
        return plan::recommend(input, model, *catalog, options, progress);
    }));
}

void RecommendationRunner::cancel()
{
    if (m_cancelFlag)
        m_cancelFlag->store(true);
}

bool RecommendationRunner::isRunning() const
{
    return m_watcher && m_watcher->isRunning();
}

} // namespace tb::ui
