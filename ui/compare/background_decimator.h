#pragma once

#include "compare/curve_decimation.h"
#include "job_runner.h"

#include <qcustomplot.h>

#include <atomic>
#include <memory>
#include <vector>

namespace tb::ui {

// What to decimate: every curve (shared, never written again, so the worker
// reads it while the UI thread goes on) at a key range and a width.
struct DecimationRequest {
    std::shared_ptr<const std::vector<CurveSeries>> curves;
    QCPRange range;
    int columns = 0;

    bool operator==(const DecimationRequest& other) const
    {
        return curves == other.curves && range == other.range && columns == other.columns;
    }
};

// The overlay's decimation for a pan or a zoom, on the thread pool, so the
// UI thread only shows the previous image meanwhile. Only the latest
// request is answered: asking for another tells the job still running to
// stop (it returns within one curve) and drops its result.
class BackgroundDecimator : public QObject {
    Q_OBJECT

public:
    explicit BackgroundDecimator(QObject* parent = nullptr);
    // Stops the job still running and waits for it: it reads nothing of the
    // overlay's, but must not outlive the thread pool's users.
    ~BackgroundDecimator() override;

    // Starts decimating for `request` unless it is the one being decimated.
    void request(const DecimationRequest& request);
    // Drops the latest request: its result will not be reported.
    void cancel();
    // Whether the latest request has yet to report.
    bool isBusy() const { return m_jobs.isRunning(); }
    // Jobs that stopped early because a newer request replaced them
    // (tests, benchmarks).
    int stoppedJobs() const { return m_stopped->load(); }

signals:
    // On this object's thread, for the latest request only.
    void decimated(const tb::ui::DecimationRequest& request, const std::vector<tb::ui::DecimatedCurve>& curves);

private:
    void stopRunning();

    JobRunner m_jobs;
    std::optional<DecimationRequest> m_running; // the latest request, until it reports
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::shared_ptr<std::atomic<int>> m_stopped = std::make_shared<std::atomic<int>>(0);
};

} // namespace tb::ui
