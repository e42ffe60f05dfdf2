#include "planner/planner_page.h"
#include "qs.h"

#include "app_settings.h"
#include "plan/plan_file.h"
#include "planner/breakdown_chart.h"
#include "planner/component_model.h"
#include "planner/plan_form.h"
#include "planner/plan_summary.h"
#include "planner/recommendation_model.h"
#include "planner/recommendation_runner.h"
#include "planner/recommendations_panel.h"
#include "planner/table_view.h"
#include "planner/what_if_chart.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QScrollArea>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

namespace tb::ui {

namespace {

// The inputs the recommender's answer depends on (the recommender says
// which it sweeps itself).
std::string recommendationKey(const plan::PlanInput& input)
{
    return plan::planToYaml(plan::withoutSweptInputs(input));
}

} // namespace

PlannerPage::PlannerPage(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    auto catalog = plan::Catalog::loadDefault();
    if (!catalog.ok()) {
        m_catalogError = qs(catalog.error().toString());
        showCatalogError(layout);
        return;
    }
    m_catalog = std::make_shared<const plan::Catalog>(std::move(catalog).value());
    // A calibration file that does not load plans without one; its error is
    // what `tunebench-cli plan` reports for the same file.
    if (auto calibration = plan::loadCalibration(plan::defaultCalibrationPath()); calibration.ok())
        m_calibration = std::move(calibration).value();

    m_form = new PlanForm(*m_catalog, this);
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(createFormPanel());
    splitter->addWidget(createResultsPanel());
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    splitter->setChildrenCollapsible(false);

    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(createToolBar());
    layout->addWidget(splitter, 1);
    createRecommendationRunner();
    connectForm();

    // Restore the last plan; a bad stored plan falls back to the defaults.
    AppSettings settings;
    auto stored =
        plan::parsePlanYaml(settings.value(settings::plannerPlan).toStdString(), "settings");
    setInput(stored.ok() ? stored.value() : plan::PlanInput{});
}

void PlannerPage::showCatalogError(QVBoxLayout* layout)
{
    auto* label = new QLabel(tr("<b>The planner's presets could not be loaded.</b><br>%1<br>"
                                "Set TUNEBENCH_PRESETS_DIR to the presets folder.")
                                 .arg(m_catalogError.toHtmlEscaped()),
        this);
    label->setObjectName(QStringLiteral("catalogError"));
    label->setWordWrap(true);
    layout->addWidget(label);
    layout->addStretch(1);
}

QWidget* PlannerPage::createFormPanel()
{
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(m_form);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setMinimumWidth(m_form->sizeHint().width() + 24);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    return scroll;
}

void PlannerPage::createRecommendationRunner()
{
    m_runner = new RecommendationRunner(m_catalog, this);
    connect(m_runner, &RecommendationRunner::finished, this, &PlannerPage::showRecommendation);
    connect(m_runner, &RecommendationRunner::progressed, m_recommendationsPanel,
        &RecommendationsPanel::showProgress);
    m_recommendTimer = new QTimer(this);
    m_recommendTimer->setSingleShot(true);
    m_recommendTimer->setInterval(150); // let a spin box settle before sweeping
    connect(m_recommendTimer, &QTimer::timeout, this, &PlannerPage::startRecommendations);
}

void PlannerPage::connectForm()
{
    // QSettings writes the file on every save; once a second is plenty.
    m_saveTimer = new QTimer(this);
    m_saveTimer->setSingleShot(true);
    m_saveTimer->setInterval(1000);
    connect(m_saveTimer, &QTimer::timeout, this, &PlannerPage::saveToSettings);

    connect(m_form, &PlanForm::inputChanged, this, &PlannerPage::recompute);
    connect(m_form, &PlanForm::openConfigRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open a Hugging Face config.json"), QString(), tr("config.json (*.json)"));
        if (path.isEmpty())
            return;
        plan::PlanInput in = input();
        in.model = path.toStdString();
        setInput(in);
    });
}

PlannerPage::~PlannerPage()
{
    if (m_saveTimer && m_saveTimer->isActive())
        saveToSettings();
}

QWidget* PlannerPage::createToolBar()
{
    auto* bar = new QWidget(this);
    auto* layout = new QHBoxLayout(bar);
    layout->setContentsMargins(0, 0, 0, 0);
    const auto addButton = [&](const QString& text, const QString& name, auto handler) {
        auto* button = new QToolButton(bar);
        button->setText(text);
        button->setObjectName(name);
        button->setToolButtonStyle(Qt::ToolButtonTextOnly);
        connect(button, &QToolButton::clicked, this, handler);
        layout->addWidget(button);
    };
    addButton(tr("Open plan…"), QStringLiteral("openPlanButton"), [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open plan"), QString(), tr("Plan (*.yaml *.yml)"));
        if (!path.isEmpty())
            runFileAction(tr("Open plan"), openPlan(path));
    });
    addButton(tr("Save plan…"), QStringLiteral("savePlanButton"), [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Save plan"), QStringLiteral("plan.yaml"), tr("Plan (*.yaml *.yml)"));
        if (!path.isEmpty())
            runFileAction(tr("Save plan"), savePlan(path));
    });
    addButton(tr("Plan a run…"), QStringLiteral("planRunButton"), [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Plan a run config on its data"), QString(), tr("Run config (*.yaml *.yml)"));
        if (!path.isEmpty())
            planRun(path);
    });
    addButton(tr("Import DeepSpeed…"), QStringLiteral("importDeepSpeedButton"), [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Import a DeepSpeed config"), QString(), tr("JSON (*.json)"));
        if (!path.isEmpty())
            runFileAction(tr("Import DeepSpeed"), importDeepSpeed(path));
    });
    addButton(tr("Import accelerate…"), QStringLiteral("importAccelerateButton"), [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Import an accelerate config"), QString(), tr("YAML (*.yaml *.yml)"));
        if (!path.isEmpty())
            runFileAction(tr("Import accelerate"), importAccelerate(path));
    });
    layout->addSpacing(16);
    addButton(tr("Export report…"), QStringLiteral("exportReportButton"), [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export a Markdown report"),
            QStringLiteral("plan-report.md"), tr("Markdown (*.md)"));
        if (!path.isEmpty())
            runFileAction(tr("Export report"), exportReport(path));
    });
    addButton(tr("Export CSV…"), QStringLiteral("exportCsvButton"), [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export recommendations"),
            QStringLiteral("recommendations.csv"), tr("CSV (*.csv)"));
        if (!path.isEmpty())
            runFileAction(tr("Export CSV"), exportRecommendationsCsv(path));
    });
    layout->addStretch(1);
    return bar;
}

QWidget* PlannerPage::createResultsPanel()
{
    auto* panel = new QWidget(this);
    auto* layout = new QVBoxLayout(panel);
    layout->setContentsMargins(6, 0, 0, 0);

    m_verdict = new QLabel(panel);
    m_verdict->setObjectName(QStringLiteral("verdictLabel"));
    QFont verdictFont = m_verdict->font();
    verdictFont.setPointSizeF(verdictFont.pointSizeF() * 1.35);
    verdictFont.setBold(true);
    m_verdict->setFont(verdictFont);
    m_details = new QLabel(panel);
    m_details->setObjectName(QStringLiteral("detailsLabel"));
    m_details->setWordWrap(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error = new QLabel(panel);
    m_error->setObjectName(QStringLiteral("errorLabel"));
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("QLabel { color: #c01c28; }"));
    m_error->hide();

    m_breakdown = new BreakdownChart(panel);
    m_breakdown->setMaximumHeight(230);

    auto* tabs = new QTabWidget(panel);
    tabs->setObjectName(QStringLiteral("plannerTabs"));
    m_recommendationsPanel = new RecommendationsPanel(tabs);
    connect(
        m_recommendationsPanel, &RecommendationsPanel::optionChosen, this, &PlannerPage::setInput);
    tabs->addTab(m_recommendationsPanel, tr("Recommendations"));
    tabs->addTab(createWhatIfTab(), tr("What if"));
    tabs->addTab(createExplanationsTab(), tr("Explanations"));

    layout->addWidget(m_verdict);
    layout->addWidget(m_details);
    layout->addWidget(m_error);
    layout->addWidget(m_breakdown);
    layout->addWidget(tabs, 1);
    return panel;
}

QWidget* PlannerPage::createWhatIfTab()
{
    auto* tab = new QWidget(this);
    auto* layout = new QVBoxLayout(tab);
    auto* row = new QHBoxLayout;
    m_whatIfAxisCombo = new QComboBox(tab);
    m_whatIfAxisCombo->setObjectName(QStringLiteral("whatIfAxisCombo"));
    m_whatIfAxisCombo->addItem(tr("micro-batch"), int(plan::SweepAxis::MicroBatch));
    m_whatIfAxisCombo->addItem(tr("sequence length"), int(plan::SweepAxis::SeqLen));
    m_whatIfAxisCombo->addItem(tr("GPU count"), int(plan::SweepAxis::GpuCount));
    connect(m_whatIfAxisCombo, &QComboBox::currentIndexChanged, this, [this] {
        m_whatIfAxis = static_cast<plan::SweepAxis>(m_whatIfAxisCombo->currentData().toInt());
        updateWhatIf();
        m_whatIf->replot();
    });
    m_largestMicroBatchLabel = new QLabel(tab);
    m_largestMicroBatchLabel->setObjectName(QStringLiteral("largestMicroBatchLabel"));
    row->addWidget(new QLabel(tr("Vary"), tab));
    row->addWidget(m_whatIfAxisCombo);
    row->addSpacing(24);
    row->addWidget(m_largestMicroBatchLabel, 1);
    m_whatIf = new WhatIfChart(tab);
    layout->addLayout(row);
    layout->addWidget(m_whatIf, 1);
    return tab;
}

QWidget* PlannerPage::createExplanationsTab()
{
    m_components = new ComponentModel(this);
    auto* view = makeResultTable(this, m_components);
    view->setObjectName(QStringLiteral("explanationView"));
    // Fixed widths: measuring every explanation's text on each keystroke
    // would cost more than the whole estimate.
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    view->setColumnWidth(ComponentModel::Name, 230);
    view->setColumnWidth(ComponentModel::Value, 110);
    view->setColumnWidth(ComponentModel::Explanation, 620);
    view->horizontalHeader()->setStretchLastSection(true);
    return view;
}

plan::PlanInput PlannerPage::input() const
{
    return m_form ? m_form->input() : plan::PlanInput{};
}

void PlannerPage::setInput(const plan::PlanInput& in)
{
    if (!m_form)
        return;
    m_form->setInput(in);
    recompute();
}

QString PlannerPage::errorText() const
{
    if (!m_catalogError.isEmpty())
        return m_catalogError;
    return m_error && !m_error->isHidden() ? m_error->text() : QString();
}

QString PlannerPage::verdictText() const
{
    return m_verdict ? m_verdict->text() : QString();
}

QString PlannerPage::detailsText() const
{
    return m_details ? m_details->text() : QString();
}

void PlannerPage::setCalibration(plan::Calibration calibration)
{
    m_calibration = std::move(calibration);
    recompute();
}

void PlannerPage::recompute()
{
    if (!m_form)
        return;
    plan::PlanInput in = m_form->input();
    if (const auto hw = plan::resolveHardware(in, *m_catalog); hw.ok())
        plan::applyCalibration(m_calibration, hw->gpu->id, in);
    auto result = plan::planFromCatalog(in, *m_catalog);
    if (!result.ok()) {
        showError(qs(result.error().toString()));
        return;
    }
    m_error->hide();
    m_result = std::move(result).value();
    if (m_modelKey != in.model) {
        auto spec = m_catalog->resolveModel(in.model);
        m_model = spec.ok() ? std::optional<model::ModelSpec>(spec.value()) : std::nullopt;
        m_modelKey = in.model;
    }

    const plan::PlanResult& r = *m_result;
    m_verdict->setText(planVerdict(r));
    m_verdict->setStyleSheet(r.fits ? QStringLiteral("QLabel { color: #267a3a; }")
                                    : QStringLiteral("QLabel { color: #c01c28; }"));
    m_details->setText(planDetailsHtml(r));

    m_breakdown->setResult(r);
    m_components->setResult(r);
    updateWhatIf();
    m_breakdown->replot(QCustomPlot::rpQueuedReplot);
    m_whatIf->replot(QCustomPlot::rpQueuedReplot);
    m_saveTimer->start();
    scheduleRecommendations();
}

void PlannerPage::updateWhatIf()
{
    if (!m_result || !m_model)
        return;
    const plan::PlanInput in = m_form->input();
    const plan::GpuSpec* gpu = m_catalog->findGpu(m_result->gpuId);
    const plan::VmSize* vm =
        m_result->vmSize.empty() ? nullptr : m_catalog->findVm(m_result->vmSize);
    if (!gpu)
        return;
    long long current = in.microBatch;
    if (m_whatIfAxis == plan::SweepAxis::SeqLen)
        current = in.seqLen;
    else if (m_whatIfAxis == plan::SweepAxis::GpuCount)
        current = m_result->worldSize;
    const int gpusPerVm = vm ? vm->gpusPerVm : m_result->gpusPerNode;
    const auto values = sweepValues(m_whatIfAxis, current, gpusPerVm);
    m_whatIf->setSweep(
        m_whatIfAxis, plan::sweepPlan(in, *m_model, *gpu, vm, m_whatIfAxis, values), current);

    m_largestMicroBatch = plan::largestFittingMicroBatch(in, *m_model, *gpu, vm, 1024);
    m_largestMicroBatchLabel->setText(m_largestMicroBatch
            ? tr("Largest micro-batch that fits: <b>%1</b> (at %2 tokens)")
                  .arg(*m_largestMicroBatch)
                  .arg(in.seqLen)
            : tr("<span style='color:#c01c28'>Even a micro-batch of 1 does not fit.</span>"));
}

void PlannerPage::setWhatIfAxis(plan::SweepAxis axis)
{
    m_whatIfAxisCombo->setCurrentIndex(m_whatIfAxisCombo->findData(int(axis)));
}

void PlannerPage::showError(const QString& message)
{
    m_error->setText(message);
    m_error->show();
    m_verdict->setText(tr("No plan"));
    m_verdict->setStyleSheet(QString());
}

void PlannerPage::scheduleRecommendations()
{
    // Restarted on every change: the sweep starts once the input has been
    // still for the timer's interval, and only if its inputs changed.
    m_recommendationsPending = true;
    m_recommendTimer->start();
}

void PlannerPage::startRecommendations()
{
    const std::string key = recommendationKey(m_form->input());
    if (!m_model || key == m_recommendationKey) {
        m_recommendationsPending = m_model && m_runner->isRunning();
        return;
    }
    m_recommendationKey = key;
    m_recommendationsPanel->showSearching();
    plan::RecommendOptions options;
    options.maxNodes = 16;
    m_runner->start(m_form->input(), *m_model, options);
}

void PlannerPage::showRecommendation(const plan::Recommendation& recommendation)
{
    m_recommendation = recommendation;
    m_recommendationsPending = m_recommendTimer->isActive();
    m_recommendationsPanel->setRecommendation(recommendation);
    emit recommendationsUpdated();
}

void PlannerPage::saveToSettings() const
{
    AppSettings settings;
    settings.setValue(settings::plannerPlan, qs(plan::planToYaml(m_form->input())));
}

void PlannerPage::runFileAction(const QString& title, const common::Status& status)
{
    if (!status.ok())
        QMessageBox::warning(this, title, qs(status.error().toString()));
}

RecommendationModel* PlannerPage::recommendationModel() const
{
    return m_recommendationsPanel ? m_recommendationsPanel->model() : nullptr;
}

RecommendationFilterModel* PlannerPage::recommendationFilter() const
{
    return m_recommendationsPanel ? m_recommendationsPanel->filter() : nullptr;
}

RejectedModel* PlannerPage::rejectedModel() const
{
    return m_recommendationsPanel ? m_recommendationsPanel->rejectedModel() : nullptr;
}

QTableView* PlannerPage::recommendationView() const
{
    return m_recommendationsPanel ? m_recommendationsPanel->view() : nullptr;
}

} // namespace tb::ui
