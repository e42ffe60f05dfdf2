#pragma once

#include "job_runner.h"
#include "plan/recommender.h"

#include <QObject>

#include <atomic>
#include <memory>

namespace tb::ui {

// Runs the recommender sweep on the thread pool, never on the UI thread.
// Starting a new sweep cancels the one in flight (through the recommender's
// progress hook) and its result is dropped, so only the latest input's
// answer is ever shown. A sweep shares the catalog it reads, so the page that
// made the catalog may die, members first, while a cancelled sweep finishes.
class RecommendationRunner : public QObject {
    Q_OBJECT

public:
    explicit RecommendationRunner(
        std::shared_ptr<const plan::Catalog> catalog, QObject* parent = nullptr);
    ~RecommendationRunner() override;

    void start(const plan::PlanInput& input, const model::ModelSpec& model,
        const plan::RecommendOptions& options);
    void cancel();
    bool isRunning() const;

signals:
    void progressed(int done, int total);
    void finished(const tb::plan::Recommendation& recommendation);

private:
    std::shared_ptr<const plan::Catalog> m_catalog;
    JobRunner* m_jobs = nullptr;
    std::shared_ptr<std::atomic<bool>> m_cancelFlag;
    quint64 m_generation = 0;
};

} // namespace tb::ui
