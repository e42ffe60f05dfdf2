#include "compare/compare_page.h"
#include "qs.h"

#include "app_settings.h"

#include "compare/overlay_charts.h"
#include "compare/prediction_table.h"
#include "compare/preference_overlay.h"
#include "compare/rank_charts.h"
#include "compare/run_end_notifier.h"
#include "compare/runs_model.h"
#include "compare/scaling_chart.h"
#include "compare/scaling_probe_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace tb::ui {

namespace {

constexpr int kSmoothingSteps = 100; // the slider's 0..99 is a weight of 0..0.99

} // namespace

ComparePage::ComparePage(QWidget* parent)
    : QWidget(parent)
    , m_model(new RunsModel(this))
    , m_proxy(new QSortFilterProxyModel(this))
    , m_notifier(new RunEndNotifier(this))
{
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(RunsModel::kSortRole);
    m_proxy->setFilterKeyColumn(-1);
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    buildLayout();

    m_follower = new CompareFollower;
    connect(m_follower, &CompareFollower::catalogRead, this, &ComparePage::onCatalogRead);
    connect(m_follower, &CompareFollower::runsRead, this, &ComparePage::onRunsRead);
    m_reader = std::make_unique<WorkerThread<CompareFollower>>(m_follower,
        QStringLiteral("compare reader"), this, &CompareFollower::stop,
        WorkerThread<CompareFollower>::Stop::Blocking);

    connect(m_model, &RunsModel::pickedChanged, this, &ComparePage::onPickedChanged);
    connect(m_notifier, &RunEndNotifier::statusMessage, this, &ComparePage::statusMessage);
    setRunsFolder(AppSettings().value(settings::compareFolder));
}

ComparePage::~ComparePage()
{
    m_reader.reset();
}

void ComparePage::buildLayout()
{
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Runs folder"), this));
    m_folderEdit = new QLineEdit(this);
    m_folderEdit->setObjectName(QStringLiteral("runsFolder"));
    m_folderEdit->setPlaceholderText(tr("a folder of run folders (each with an events.jsonl)"));
    connect(m_folderEdit, &QLineEdit::editingFinished, this,
        [this] { setRunsFolder(m_folderEdit->text().trimmed()); });
    top->addWidget(m_folderEdit, 2);
    auto* browse = new QToolButton(this);
    browse->setText(QStringLiteral("…"));
    connect(browse, &QToolButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Runs folder"), m_folder);
        if (!dir.isEmpty())
            setRunsFolder(dir);
    });
    top->addWidget(browse);
    top->addSpacing(16);
    top->addWidget(new QLabel(tr("Filter"), this));
    m_filter = new QLineEdit(this);
    m_filter->setObjectName(QStringLiteral("runsFilter"));
    m_filter->setPlaceholderText(tr("name, model, method, state…"));
    m_filter->setClearButtonEnabled(true);
    connect(
        m_filter, &QLineEdit::textChanged, m_proxy, &QSortFilterProxyModel::setFilterFixedString);
    top->addWidget(m_filter, 1);
    layout->addLayout(top);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    m_table = new QTableView(splitter);
    m_table->setObjectName(QStringLiteral("runsTable"));
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(RunsModel::Started, Qt::DescendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setMinimumHeight(m_table->verticalHeader()->defaultSectionSize() * 5);
    auto* tabs = new QTabWidget(splitter);
    m_tabs = tabs;
    tabs->setObjectName(QStringLiteral("compareTabs"));
    tabs->addTab(buildOverlayTab(), tr("Overlay"));
    m_preference = new PreferenceOverlay(tabs);
    tabs->addTab(m_preference, tr("DPO"));
    tabs->setTabVisible(tabs->indexOf(m_preference), false); // until a DPO run is picked
    tabs->addTab(buildRankTab(), tr("By rank"));
    tabs->addTab(buildScalingTab(), tr("Scaling"));
    m_prediction = new PredictionTable(tabs);
    tabs->addTab(m_prediction, tr("Predicted vs measured"));
    splitter->addWidget(m_table);
    splitter->addWidget(tabs);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 4);
    layout->addWidget(splitter, 1);
}

bool ComparePage::preferenceTabShown() const
{
    return m_tabs->isTabVisible(m_tabs->indexOf(m_preference));
}

QWidget* ComparePage::buildOverlayTab()
{
    auto* tab = new QWidget(this);
    auto* layout = new QVBoxLayout(tab);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("x-axis"), tab));
    m_xAxis = new QComboBox(tab);
    m_xAxis->setObjectName(QStringLiteral("xAxis"));
    m_xAxis->addItem(tr("step"), int(metrics::XAxis::Step));
    m_xAxis->addItem(tr("tokens seen"), int(metrics::XAxis::Tokens));
    m_xAxis->addItem(tr("wall time"), int(metrics::XAxis::WallSeconds));
    controls->addWidget(m_xAxis);
    controls->addSpacing(16);
    controls->addWidget(new QLabel(tr("smoothing"), tab));
    m_smoothing = new QSlider(Qt::Horizontal, tab);
    m_smoothing->setObjectName(QStringLiteral("smoothing"));
    m_smoothing->setRange(0, kSmoothingSteps - 1);
    m_smoothing->setMaximumWidth(200);
    m_smoothing->setToolTip(tr("Exponential moving average of loss and tokens/s, de-biased at the "
                               "start as TensorBoard does"));
    controls->addWidget(m_smoothing);
    m_smoothingValue = new QLabel(QStringLiteral("0.00"), tab);
    controls->addWidget(m_smoothingValue);
    controls->addSpacing(16);
    m_logLoss = new QCheckBox(tr("log-scale loss"), tab);
    m_logLoss->setObjectName(QStringLiteral("logLoss"));
    controls->addWidget(m_logLoss);
    controls->addStretch(1);
    layout->addLayout(controls);
    m_overlay = new OverlayCharts(tab);
    layout->addWidget(m_overlay, 1);

    connect(m_xAxis, &QComboBox::currentIndexChanged, this,
        [this] { m_overlay->setXAxis(metrics::XAxis(m_xAxis->currentData().toInt())); });
    connect(m_smoothing, &QSlider::valueChanged, this, [this](int value) {
        const double weight = double(value) / kSmoothingSteps;
        m_smoothingValue->setText(QString::number(weight, 'f', 2));
        m_overlay->setSmoothing(weight);
    });
    connect(m_logLoss, &QCheckBox::toggled, m_overlay, &OverlayCharts::setLogLoss);
    return tab;
}

QWidget* ComparePage::buildRankTab()
{
    auto* tab = new QWidget(this);
    auto* layout = new QVBoxLayout(tab);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Run"), tab));
    m_rankRun = new QComboBox(tab);
    m_rankRun->setObjectName(QStringLiteral("rankRun"));
    m_rankRun->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    controls->addWidget(m_rankRun);
    controls->addStretch(1);
    layout->addLayout(controls);
    m_rankCharts = new RankCharts(tab);
    layout->addWidget(m_rankCharts, 1);
    connect(m_rankRun, &QComboBox::currentIndexChanged, this, &ComparePage::updateRankRun);
    return tab;
}

QWidget* ComparePage::buildScalingTab()
{
    auto* tab = new QWidget(this);
    auto* layout = new QVBoxLayout(tab);
    m_probe = new ScalingProbePanel(tab);
    layout->addWidget(m_probe);
    m_scalingNote = new QLabel(tr("Tick runs of one recipe at several sizes."), tab);
    m_scalingNote->setObjectName(QStringLiteral("scalingNote"));
    m_scalingNote->setWordWrap(true);
    layout->addWidget(m_scalingNote);
    m_scaling = new ScalingChart(tab);
    layout->addWidget(m_scaling, 1);
    connect(m_probe, &ScalingProbePanel::probeStarted, this, [this](const QString& outDir) {
        m_probeDir = QDir(outDir).absolutePath();
        for (const QString& dir : m_model->pickedDirs())
            m_model->setPicked(dir, false);
    });
    return tab;
}

void ComparePage::setRunsFolder(const QString& folder)
{
    const QString absolute = folder.isEmpty() ? QString() : QDir(folder).absolutePath();
    if (absolute == m_folder)
        return;
    m_folder = absolute;
    m_folderEdit->setText(m_folder);
    m_probe->setRunsFolder(m_folder);
    m_model->setRuns({});
    AppSettings().setValue(settings::compareFolder, m_folder);
    QMetaObject::invokeMethod(
        m_follower, "setRoot", Qt::QueuedConnection, Q_ARG(QString, m_folder));
}

void ComparePage::setPicked(const QString& dir, bool picked)
{
    m_model->setPicked(QDir(dir).absolutePath(), picked);
}

void ComparePage::onPickedChanged(const QStringList& dirs)
{
    m_notifier->setFollowed(dirs);
    updatePrediction();
    QMetaObject::invokeMethod(
        m_follower, "setPicked", Qt::QueuedConnection, Q_ARG(QStringList, dirs));
}

void ComparePage::onCatalogRead(const QVector<tb::metrics::RunEntry>& runs)
{
    m_model->setRuns(runs);
    if (!m_probeDir.isEmpty()) {
        for (const metrics::RunEntry& run : runs) {
            if (qs(run.dir).startsWith(m_probeDir + QLatin1Char('/')))
                m_model->setPicked(qs(run.dir), true);
        }
    }
    m_notifier->update(runs);
    updateScaling();
    updatePrediction();
    emit catalogChanged();
}

void ComparePage::onRunsRead(const QVector<tb::ui::ComparedRun>& runs)
{
    // A batch read before the last change of the picked runs is stale.
    QStringList dirs;
    for (const ComparedRun& run : runs)
        dirs << run.dir;
    if (dirs != m_model->pickedDirs())
        return;
    m_compared = runs;
    m_overlay->setRuns(runs);
    m_preference->setRuns(runs);
    m_tabs->setTabVisible(m_tabs->indexOf(m_preference), m_preference->runCount() > 0);
    const QString current = m_rankRun->currentData().toString();
    {
        const QSignalBlocker blocker(m_rankRun);
        m_rankRun->clear();
        for (const ComparedRun& run : runs) {
            const QString name = run.history->start() ? qs(run.history->start()->runId) : run.dir;
            m_rankRun->addItem(tr("%1 (%2 ranks)").arg(name).arg(run.ranks.size() + 1), run.dir);
        }
        const int index = m_rankRun->findData(current);
        m_rankRun->setCurrentIndex(index >= 0 ? index : 0);
    }
    updateRankRun();
    updateScaling();
    emit comparedRunsChanged();
}

void ComparePage::updateRankRun()
{
    const QString dir = m_rankRun->currentData().toString();
    for (const ComparedRun& run : m_compared) {
        if (run.dir == dir) {
            m_rankCharts->setRun(run);
            return;
        }
    }
    m_rankCharts->clearRun();
}

QVector<metrics::RunEntry> ComparePage::pickedEntries() const
{
    QVector<metrics::RunEntry> picked;
    for (const QString& dir : m_model->pickedDirs()) {
        for (const metrics::RunEntry& run : m_model->runs()) {
            if (qs(run.dir) == dir)
                picked.append(run);
        }
    }
    return picked;
}

void ComparePage::updateScaling()
{
    // The runs of the first compared run's recipe; the others are named.
    std::vector<metrics::RunEntry> sameRecipe;
    QVector<QPair<int, double>> predictedCurve;
    QStringList leftOut;
    nlohmann::json recipe;
    for (const ComparedRun& run : m_compared) {
        if (!run.history->start())
            continue;
        const nlohmann::json key = metrics::recipeKey(run.history->start()->config);
        if (sameRecipe.empty() && recipe.is_null())
            recipe = key;
        const std::string difference = metrics::firstDifference(recipe, key);
        const QString name = qs(run.history->start()->runId);
        if (!difference.empty()) {
            leftOut << tr("%1 (differs in %2)").arg(name, qs(difference));
            continue;
        }
        for (const metrics::RunEntry& entry : m_model->runs()) {
            if (qs(entry.dir) == run.dir)
                sameRecipe.push_back(entry);
        }
        if (predictedCurve.isEmpty())
            predictedCurve = run.predictedCurve;
    }
    const std::vector<metrics::ScalingPoint> points = metrics::scalingPoints(sameRecipe);
    // The planner's curve over the counts measured.
    const int largest = points.empty() ? 0 : points.back().gpus;
    predictedCurve.erase(
        std::remove_if(predictedCurve.begin(), predictedCurve.end(),
            [largest](const QPair<int, double>& point) { return point.first > largest; }),
        predictedCurve.end());
    m_scaling->setPoints(points, predictedCurve);
    QString note = points.empty() ? tr("Tick runs of one recipe at several sizes (or run a probe).")
                                  : tr("%n run(s) of one recipe; efficiency against the smallest.",
                                      nullptr, int(points.size()));
    if (!leftOut.isEmpty())
        note += QLatin1Char(' ') + tr("Left out: %1.").arg(leftOut.join(QStringLiteral(", ")));
    m_scalingNote->setText(note);
}

void ComparePage::updatePrediction()
{
    m_prediction->setRuns(pickedEntries());
}

QString ComparePage::scalingNote() const
{
    return m_scalingNote->text();
}

} // namespace tb::ui
