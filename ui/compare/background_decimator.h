#pragma once

#include "compare/compare_follower.h"
#include "compare/curve_decimation.h"
#include "job_runner.h"

#include <qcustomplot.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
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

// Curves still to be made, for new data: the job makes them from `runs`,
// then decimates them over their whole key range (`fallback` when no curve
// has a point) at `columns`. `make` must read only what it is given (the
// runs' immutable histories), never the overlay, and give up with nothing
// once `cancelled` is set.
struct CurveBuild {
    QVector<ComparedRun> runs;
    std::function<std::optional<std::vector<CurveSeries>>(
        const QVector<ComparedRun>& runs, const std::atomic<bool>* cancelled)>
        make;
    QCPRange fallback;
    int columns = 0;
};

// The overlay's decimation on the thread pool, so that the UI thread only
// shows the previous image meanwhile: for a pan or a zoom (request()), and
// for new data (build()), each kind on its own. Only the latest request is
// answered: asking for another tells the job still running to stop (it
// returns within one curve) and drops its result. Builds are not stopped
// by newer ones, since a followed run asks for one about every second and
// a build may take longer than that: the build running finishes and is
// answered, and only the newest of those asked for meanwhile is built next.
class BackgroundDecimator : public QObject {
    Q_OBJECT

public:
    explicit BackgroundDecimator(QObject* parent = nullptr);
    // Stops the jobs still running and waits for them: they read nothing of
    // the overlay's, but must not outlive the thread pool's users.
    ~BackgroundDecimator() override;

    // Starts decimating for `request` unless it is the one being decimated.
    void request(const DecimationRequest& request);
    // Drops the latest request: its result will not be reported.
    void cancel();
    // Starts making and decimating new curves, or, while a build runs,
    // keeps them to be built once it has answered, in place of any kept
    // before.
    void build(CurveBuild build);
    // Stops the build running and drops the one kept: neither is reported.
    void cancelBuild();
    // Whether the latest request or build has yet to report.
    bool isBusy() const { return m_jobs.isRunning(); }
    bool isBuilding() const { return m_building.has_value(); }
    // Jobs that stopped early (a newer request, or cancelled), and builds
    // dropped unbuilt for a newer one kept in their place (tests,
    // benchmarks).
    int stoppedJobs() const { return m_stopped->load(); }
    int coalescedBuilds() const { return m_coalesced; }
    // Called on the pool as each build job starts (tests: a build made to
    // outlast the calls that come while it runs).
    void setBuildHook(std::function<void()> hook) { m_buildHook = std::move(hook); }

signals:
    // On this object's thread, for the latest request only.
    void decimated(const tb::ui::DecimationRequest& request,
        const std::vector<tb::ui::DecimatedCurve>& curves);
    // On this object's thread, for each build not cancelled nor replaced
    // before it started, in the order asked for: `request` holds the new
    // curves of `runs`, their whole key range and the width.
    void built(const QVector<tb::ui::ComparedRun>& runs, const tb::ui::DecimationRequest& request,
        const std::vector<tb::ui::DecimatedCurve>& curves);

private:
    // The stop flag of a kind's running job.
    using StopFlag = std::shared_ptr<std::atomic<bool>>;
    static void stop(StopFlag& flag);
    void startBuild(CurveBuild build);

    JobRunner m_jobs;
    std::optional<DecimationRequest> m_running; // the latest request, until it reports
    StopFlag m_cancel;
    std::optional<quint64> m_building; // the build running, until it reports
    std::optional<CurveBuild> m_nextBuild; // the newest asked for meanwhile
    quint64 m_builds = 0;
    int m_coalesced = 0;
    StopFlag m_cancelBuild;
    std::function<void()> m_buildHook;
    std::shared_ptr<std::atomic<int>> m_stopped = std::make_shared<std::atomic<int>>(0);
};

} // namespace tb::ui
