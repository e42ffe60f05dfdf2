#pragma once

#include <QWidget>

class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace tb::ui {

class RunLauncher;

// The scaling probe's controls: a recipe, the rank counts and the steps per
// run; Run starts `tunebench-cli scaling` (each size one launch after the
// other) into a folder of its own under the runs folder, Stop asks it to
// stop (the run going on checkpoints and ends "stopped").
class ScalingProbePanel : public QWidget {
    Q_OBJECT

public:
    explicit ScalingProbePanel(QWidget* parent = nullptr);

    // False with `error` set when it cannot start. `outDir` receives the
    // folder the probe's runs go to.
    bool start(const QString& configPath, const QString& rankCounts, int steps,
        const QString& runsFolder, QString* outDir, QString* error);
    RunLauncher* launcher() const { return m_launcher; }
    void setRunsFolder(const QString& folder) { m_runsFolder = folder; }

signals:
    // The page picks the probe's runs as they appear in `outDir`.
    void probeStarted(const QString& outDir);
    void probeFinished(int exitCode);
    void startRefused(const QString& reason);

private:
    void startFromForm();

    RunLauncher* m_launcher = nullptr;
    QString m_runsFolder;
    QLineEdit* m_config = nullptr;
    QLineEdit* m_counts = nullptr;
    QSpinBox* m_steps = nullptr;
    QPushButton* m_run = nullptr;
    QPushButton* m_stop = nullptr;
    QLabel* m_status = nullptr;
};

} // namespace tb::ui
