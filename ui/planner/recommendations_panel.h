#pragma once

#include "plan/recommender.h"

#include <QWidget>

class QDoubleSpinBox;
class QLabel;
class QModelIndex;
class QProgressBar;
class QSpinBox;
class QTableView;

namespace tb::ui {

class RecommendationFilterModel;
class RecommendationModel;
class RejectedModel;

// The recommender's answer: filters (max nodes, time budget, max cost, best
// per VM size), the ranked options, the rejected ones with their reasons,
// and the sweep's progress. Choosing a row hands its plan to the page.
class RecommendationsPanel : public QWidget {
    Q_OBJECT

public:
    explicit RecommendationsPanel(QWidget* parent = nullptr);

    void showSearching();
    void showProgress(int done, int total);
    void setRecommendation(const plan::Recommendation& recommendation);

    RecommendationModel* model() const { return m_recommendations; }
    RecommendationFilterModel* filter() const { return m_recommendationFilter; }
    RejectedModel* rejectedModel() const { return m_rejected; }
    QTableView* view() const { return m_recommendationView; }

signals:
    void optionChosen(const tb::plan::PlanInput& input);

private:
    void chooseRow(const QModelIndex& proxyIndex);

    RecommendationModel* m_recommendations = nullptr;
    RecommendationFilterModel* m_recommendationFilter = nullptr;
    RejectedModel* m_rejected = nullptr;
    QTableView* m_recommendationView = nullptr;
    QLabel* m_recommendationStatus = nullptr;
    QProgressBar* m_recommendationProgress = nullptr;
    QSpinBox* m_maxNodes = nullptr;
    QDoubleSpinBox* m_maxHours = nullptr;
    QDoubleSpinBox* m_maxCost = nullptr;
};

} // namespace tb::ui
