#pragma once

#include "plan/calibration.h"
#include "plan/catalog.h"
#include "plan/estimator.h"
#include "plan/recommender.h"

#include <QWidget>

#include <memory>
#include <optional>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QSpinBox;
class QTableView;
class QTimer;
class QVBoxLayout;

namespace tb::ui {

class BreakdownChart;
class ComponentModel;
class JobRunner;
class PlanForm;
class RecommendationFilterModel;
class RecommendationModel;
class RecommendationRunner;
class RecommendationsPanel;
class RejectedModel;
class WhatIfChart;

// Memory-calculator mode: the plan's inputs on the left; on the right the
// verdict, the per-GPU breakdown chart, what-if sweeps, the Azure
// recommendations and every explanation. The estimate runs on the UI thread
// (microseconds); the recommender sweep runs on a worker.
class PlannerPage : public QWidget {
    Q_OBJECT

public:
    explicit PlannerPage(QWidget* parent = nullptr);
    ~PlannerPage() override;

    plan::PlanInput input() const;
    void setInput(const plan::PlanInput& input);
    const std::optional<plan::PlanResult>& result() const { return m_result; }
    QString errorText() const;
    QString verdictText() const;
    QString detailsText() const;
    // The calibration plans apply (plan::defaultCalibrationPath() at start).
    void setCalibration(plan::Calibration calibration);

    PlanForm* form() const { return m_form; }
    BreakdownChart* breakdownChart() const { return m_breakdown; }
    WhatIfChart* whatIfChart() const { return m_whatIf; }
    RecommendationModel* recommendationModel() const;
    RecommendationFilterModel* recommendationFilter() const;
    RejectedModel* rejectedModel() const;
    QTableView* recommendationView() const;
    std::optional<int> largestFittingMicroBatch() const { return m_largestMicroBatch; }
    // True from an input change until the recommendations for it are shown.
    bool recommendationsPending() const { return m_recommendationsPending; }
    void setWhatIfAxis(plan::SweepAxis axis);

    // File actions without dialogs (the toolbar's buttons ask for the path).
    common::Status savePlan(const QString& path) const;
    common::Status openPlan(const QString& path);
    common::Status importDeepSpeed(const QString& path);
    common::Status importAccelerate(const QString& path);
    common::Status exportReport(const QString& markdownPath);
    common::Status exportRecommendationsCsv(const QString& path) const;
    // A run config planned on its own data: read, tokenized and batched as
    // the trainer will on a worker (docs/PLANNER.md 4.13); runPlanned follows.
    void planRun(const QString& path);

public slots:
    void recompute(); // estimate and repaint now (the form calls it on every change)

signals:
    void recommendationsUpdated();
    void runPlanned(bool ok);

private:
    void showCatalogError(QVBoxLayout* layout);
    QWidget* createFormPanel();
    void createRecommendationRunner();
    void connectForm();
    QWidget* createToolBar();
    QWidget* createResultsPanel();
    QWidget* createWhatIfTab();
    QWidget* createExplanationsTab();
    void updateWhatIf();
    void scheduleRecommendations();
    void startRecommendations();
    void showRecommendation(const plan::Recommendation& recommendation);
    void showError(const QString& message);
    void saveToSettings() const;
    void runFileAction(const QString& title, const common::Status& status);

    std::shared_ptr<const plan::Catalog> m_catalog; // shared with the sweeps in flight
    plan::Calibration m_calibration;
    QString m_catalogError;
    std::optional<model::ModelSpec> m_model;
    std::string m_modelKey; // the input.model the cached spec was resolved for
    std::optional<plan::PlanResult> m_result;
    std::optional<plan::Recommendation> m_recommendation;
    std::string m_recommendationKey; // the inputs the current sweep answers
    std::optional<int> m_largestMicroBatch;
    bool m_recommendationsPending = false;
    plan::SweepAxis m_whatIfAxis = plan::SweepAxis::MicroBatch;

    PlanForm* m_form = nullptr;
    QLabel* m_verdict = nullptr;
    QLabel* m_details = nullptr;
    QLabel* m_error = nullptr;
    BreakdownChart* m_breakdown = nullptr;
    WhatIfChart* m_whatIf = nullptr;
    QComboBox* m_whatIfAxisCombo = nullptr;
    QLabel* m_largestMicroBatchLabel = nullptr;
    RecommendationsPanel* m_recommendationsPanel = nullptr;
    ComponentModel* m_components = nullptr;
    RecommendationRunner* m_runner = nullptr;
    JobRunner* m_jobs = nullptr; // reading a run's data
    QTimer* m_recommendTimer = nullptr;
    QTimer* m_saveTimer = nullptr;
};

} // namespace tb::ui
