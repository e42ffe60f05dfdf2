#pragma once

#include "compare/compare_follower.h"
#include "worker_thread.h"

#include <QWidget>
#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QSlider;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QThread;

namespace tb::ui {

class OverlayCharts;
class PredictionTable;
class PreferenceOverlay;
class RankCharts;
class RunEndNotifier;
class RunsModel;
class ScalingChart;
class ScalingProbePanel;

// Compare runs: the runs under a folder in a sortable, filterable list;
// the runs ticked there overlaid (loss, learning rate, tokens/s, memory),
// one run's ranks side by side, the scaling curve of runs of one recipe at
// several sizes with the ideal line and the planner's prediction, and each
// run's measured figures against its prediction. The folder is read on a
// worker thread (CompareFollower); the UI thread only draws.
class ComparePage : public QWidget {
    Q_OBJECT

public:
    explicit ComparePage(QWidget* parent = nullptr);
    ~ComparePage() override;

    void setRunsFolder(const QString& folder);
    QString runsFolder() const { return m_folder; }
    void setPicked(const QString& dir, bool picked);

    RunsModel* runsModel() const { return m_model; }
    QSortFilterProxyModel* runsProxy() const { return m_proxy; }
    QTableView* runsView() const { return m_table; }
    OverlayCharts* overlay() const { return m_overlay; }
    PreferenceOverlay* preferenceOverlay() const { return m_preference; }
    // Whether the DPO tab is offered: while a picked run has DPO figures.
    bool preferenceTabShown() const;
    RankCharts* rankCharts() const { return m_rankCharts; }
    ScalingChart* scalingChart() const { return m_scaling; }
    PredictionTable* predictionTable() const { return m_prediction; }
    ScalingProbePanel* probe() const { return m_probe; }
    RunEndNotifier* notifier() const { return m_notifier; }
    QComboBox* xAxisChoice() const { return m_xAxis; }
    QSlider* smoothingSlider() const { return m_smoothing; }
    QCheckBox* logLossBox() const { return m_logLoss; }
    QComboBox* rankRunChoice() const { return m_rankRun; }
    const QVector<ComparedRun>& comparedRuns() const { return m_compared; }
    QString scalingNote() const;

signals:
    void catalogChanged();
    void comparedRunsChanged();
    void statusMessage(const QString& text);

private:
    void buildLayout();
    QWidget* buildOverlayTab();
    QWidget* buildRankTab();
    QWidget* buildScalingTab();
    void onCatalogRead(const QVector<tb::metrics::RunEntry>& runs);
    void onRunsRead(const QVector<tb::ui::ComparedRun>& runs);
    void onPickedChanged(const QStringList& dirs);
    void updateScaling();
    void updatePrediction();
    void updateRankRun();
    QVector<metrics::RunEntry> pickedEntries() const;

    QString m_folder;
    QString m_probeDir; // the running probe's runs are picked as they appear
    QVector<ComparedRun> m_compared;

    CompareFollower* m_follower = nullptr; // lives on m_reader's thread
    std::unique_ptr<WorkerThread<CompareFollower>> m_reader;
    RunsModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    RunEndNotifier* m_notifier = nullptr;

    QLineEdit* m_folderEdit = nullptr;
    QLineEdit* m_filter = nullptr;
    QTableView* m_table = nullptr;
    OverlayCharts* m_overlay = nullptr;
    QComboBox* m_xAxis = nullptr;
    QSlider* m_smoothing = nullptr;
    QLabel* m_smoothingValue = nullptr;
    QCheckBox* m_logLoss = nullptr;
    RankCharts* m_rankCharts = nullptr;
    QComboBox* m_rankRun = nullptr;
    ScalingChart* m_scaling = nullptr;
    QLabel* m_scalingNote = nullptr;
    ScalingProbePanel* m_probe = nullptr;
    PredictionTable* m_prediction = nullptr;
    QTabWidget* m_tabs = nullptr;
    PreferenceOverlay* m_preference = nullptr;
};

} // namespace tb::ui
