#pragma once

#include "metrics/live_catalog.h"

#include <QObject>
#include <QStringList>
#include <QVector>

#include <map>
#include <memory>

class QTimer;

namespace tb::ui {

// A run being compared, as the UI thread draws it: immutable snapshots of
// its rank-0 history and of the other ranks', shared until the run changes.
struct ComparedRun {
    QString dir;
    std::shared_ptr<const metrics::RunHistory> history;
    QVector<QPair<int, std::shared_ptr<const metrics::RunHistory>>> ranks; // 1 and up
    // The planner's tokens/s for the run's recipe at 1 to kPredictedRanks
    // ranks on this machine's CPU; empty unless its run_start records a
    // CPU prediction.
    QVector<QPair<int, double>> predictedCurve;
    // A DPO run's figures by step; null for a supervised run.
    std::shared_ptr<const metrics::PreferenceHistory> preference = {};
};

inline constexpr int kPredictedRanks = 8;

// Keeps a metrics::LiveCatalog of a folder up to date on a worker thread:
// every poll it reads what the runs appended, sends the runs list when
// anything changed, and fresh snapshots of the picked runs that changed.
// Live in a QThread of its own; talk to it through queued calls only.
class CompareFollower : public QObject {
    Q_OBJECT

public:
    explicit CompareFollower(QObject* parent = nullptr);
    ~CompareFollower() override;

    static constexpr int kPollMilliseconds = 1000;

public slots:
    void setRoot(const QString& root);
    void setPicked(const QStringList& dirs);
    void stop();

signals:
    void catalogRead(const QVector<tb::metrics::RunEntry>& runs);
    // Every picked run, in the order picked.
    void runsRead(const QVector<tb::ui::ComparedRun>& runs);

private:
    void poll();
    void ensureTimer();
    ComparedRun snapshot(const std::string& dir, bool changed);
    QVector<QPair<int, double>> predictedCurve(
        const std::string& dir, const metrics::RunHistory& history);

    QTimer* m_timer = nullptr;
    metrics::LiveCatalog m_catalog;
    QStringList m_picked;
    bool m_pickedChanged = false;
    std::map<std::string, ComparedRun> m_snapshots;
    std::map<std::string, QVector<QPair<int, double>>>
        m_curves; // by folder: a recipe never changes
};

} // namespace tb::ui

Q_DECLARE_METATYPE(QVector<tb::metrics::RunEntry>)
Q_DECLARE_METATYPE(QVector<tb::ui::ComparedRun>)
