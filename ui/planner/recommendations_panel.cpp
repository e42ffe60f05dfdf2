#include "planner/recommendations_panel.h"

#include "planner/recommendation_model.h"
#include "planner/table_view.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace tb::ui {

RecommendationsPanel::RecommendationsPanel(QWidget* parent)
    : QWidget(parent)
{

    auto* layout = new QVBoxLayout(this);
    auto* filters = new QHBoxLayout;
    m_maxNodes = new QSpinBox(this);
    m_maxNodes->setObjectName(QStringLiteral("maxNodesSpin"));
    m_maxNodes->setRange(1, 16);
    m_maxNodes->setValue(16);
    m_maxHours = new QDoubleSpinBox(this);
    m_maxHours->setObjectName(QStringLiteral("maxHoursSpin"));
    m_maxHours->setRange(0, 1e6);
    m_maxHours->setSpecialValueText(tr("any"));
    m_maxHours->setSuffix(tr(" h"));
    m_maxCost = new QDoubleSpinBox(this);
    m_maxCost->setObjectName(QStringLiteral("maxCostSpin"));
    m_maxCost->setRange(0, 1e9);
    m_maxCost->setDecimals(0);
    m_maxCost->setSpecialValueText(tr("any"));
    m_maxCost->setPrefix(QStringLiteral("$"));
    auto* bestPerVm = new QCheckBox(tr("best per VM size"), this);
    bestPerVm->setObjectName(QStringLiteral("bestPerVmCheck"));
    bestPerVm->setToolTip(
        tr("Show only each VM size's best option (by the recommender's ranking)"));
    auto* runnableOnly = new QCheckBox(tr("Tunebench trainer only"), this);
    runnableOnly->setObjectName(QStringLiteral("trainerRunnableCheck"));
    runnableOnly->setToolTip(tr("Hide options on GPUs Tunebench's own trainer cannot run on "
                                "(it is built on LibTorch for CUDA 13: not AMD, not Volta)"));
    m_recommendationProgress = new QProgressBar(this);
    m_recommendationProgress->setTextVisible(false);
    m_recommendationStatus = new QLabel(this);
    m_recommendationStatus->setObjectName(QStringLiteral("recommendationStatus"));
    filters->addWidget(new QLabel(tr("Max nodes"), this));
    filters->addWidget(m_maxNodes);
    filters->addSpacing(12);
    filters->addWidget(new QLabel(tr("Time budget"), this));
    filters->addWidget(m_maxHours);
    filters->addSpacing(12);
    filters->addWidget(new QLabel(tr("Max cost"), this));
    filters->addWidget(m_maxCost);
    filters->addSpacing(12);
    filters->addWidget(bestPerVm);
    filters->addWidget(runnableOnly);
    filters->addStretch(1);
    // The sweep's progress and outcome on their own line, so narrow windows
    // never cut them.
    auto* statusRow = new QHBoxLayout;
    m_recommendationProgress->setMaximumWidth(120);
    m_recommendationProgress->setMaximumHeight(12);
    statusRow->addWidget(m_recommendationStatus, 1);
    statusRow->addWidget(m_recommendationProgress);

    m_recommendations = new RecommendationModel(this);
    m_recommendationFilter = new RecommendationFilterModel(this);
    m_recommendationFilter->setSourceModel(m_recommendations);
    m_recommendationView = makeResultTable(this, m_recommendationFilter);
    m_recommendationView->setObjectName(QStringLiteral("recommendationView"));
    m_recommendationView->setSortingEnabled(true);
    m_recommendationView->sortByColumn(RecommendationModel::Rank, Qt::AscendingOrder);
    m_recommendationView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_recommendationView->horizontalHeader()->setStretchLastSection(true);
    connect(m_recommendationView, &QTableView::activated, this, &RecommendationsPanel::chooseRow);
    connect(m_recommendationView, &QTableView::clicked, this, &RecommendationsPanel::chooseRow);

    m_rejected = new RejectedModel(this);
    auto* rejectedView = makeResultTable(this, m_rejected);
    rejectedView->setObjectName(QStringLiteral("rejectedView"));
    rejectedView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    rejectedView->horizontalHeader()->setStretchLastSection(true);

    connect(bestPerVm, &QCheckBox::toggled, m_recommendationFilter,
        &RecommendationFilterModel::setBestPerVmSizeOnly);
    bestPerVm->setChecked(true);
    connect(runnableOnly, &QCheckBox::toggled, m_recommendationFilter,
        &RecommendationFilterModel::setTrainerRunnableOnly);
    connect(m_maxNodes, &QSpinBox::valueChanged, m_recommendationFilter,
        &RecommendationFilterModel::setMaxNodes);
    connect(m_maxHours, &QDoubleSpinBox::valueChanged, m_recommendationFilter,
        &RecommendationFilterModel::setMaxHours);
    connect(m_maxCost, &QDoubleSpinBox::valueChanged, m_recommendationFilter,
        &RecommendationFilterModel::setMaxCostUsd);

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_recommendationView);
    auto* rejectedBox = new QWidget(split);
    auto* rejectedLayout = new QVBoxLayout(rejectedBox);
    rejectedLayout->setContentsMargins(0, 4, 0, 0);
    rejectedLayout->addWidget(new QLabel(tr("Rejected options and why"), rejectedBox));
    rejectedLayout->addWidget(rejectedView);
    split->addWidget(rejectedBox);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);

    layout->addLayout(filters);
    layout->addLayout(statusRow);
    layout->addWidget(split, 1);
}

void RecommendationsPanel::showSearching()
{
    m_recommendationStatus->setText(tr("Searching Azure VM sizes…"));
}

void RecommendationsPanel::showProgress(int done, int total)
{
    m_recommendationProgress->setRange(0, total);
    m_recommendationProgress->setValue(done);
}

void RecommendationsPanel::setRecommendation(const plan::Recommendation& recommendation)
{
    m_recommendations->setRecommendation(recommendation);
    m_rejected->setRejected(recommendation.rejected);
    m_recommendationStatus->setText(tr("%1 fit, %2 rejected, %3 plans tried")
                                        .arg(recommendation.options.size())
                                        .arg(recommendation.rejected.size())
                                        .arg(recommendation.evaluated));
}

void RecommendationsPanel::chooseRow(const QModelIndex& proxyIndex)
{
    const QModelIndex source = m_recommendationFilter->mapToSource(proxyIndex);
    if (const plan::RecommendedOption* option = m_recommendations->option(source.row()))
        emit optionChosen(option->input);
}

} // namespace tb::ui
