#include "compare/scaling_probe_panel.h"

#include "runs/run_launcher.h"

#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>

namespace tb::ui {

ScalingProbePanel::ScalingProbePanel(QWidget* parent)
    : QWidget(parent)
    , m_launcher(new RunLauncher(this))
{
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new QLabel(tr("Scaling probe: recipe"), this));
    m_config = new QLineEdit(this);
    m_config->setObjectName(QStringLiteral("probeConfig"));
    m_config->setPlaceholderText(tr("RUN.yaml"));
    layout->addWidget(m_config, 1);
    auto* browse = new QToolButton(this);
    browse->setText(QStringLiteral("…"));
    connect(browse, &QToolButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Recipe"), m_config->text(), tr("Run configs (*.yaml *.yml)"));
        if (!path.isEmpty())
            m_config->setText(path);
    });
    layout->addWidget(browse);
    layout->addWidget(new QLabel(tr("ranks"), this));
    m_counts = new QLineEdit(QStringLiteral("1,2,4"), this);
    m_counts->setObjectName(QStringLiteral("probeCounts"));
    m_counts->setMaximumWidth(90);
    layout->addWidget(m_counts);
    layout->addWidget(new QLabel(tr("steps"), this));
    m_steps = new QSpinBox(this);
    m_steps->setObjectName(QStringLiteral("probeSteps"));
    m_steps->setRange(3, 100000);
    m_steps->setValue(20);
    layout->addWidget(m_steps);
    m_run = new QPushButton(tr("Run probe"), this);
    m_run->setObjectName(QStringLiteral("runProbe"));
    connect(m_run, &QPushButton::clicked, this, &ScalingProbePanel::startFromForm);
    layout->addWidget(m_run);
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setEnabled(false);
    connect(m_stop, &QPushButton::clicked, m_launcher, &RunLauncher::stop);
    layout->addWidget(m_stop);
    m_status = new QLabel(this);
    layout->addWidget(m_status);
    connect(
        m_launcher, &RunLauncher::finished, this, [this](int exitCode, const QString& description) {
            m_run->setEnabled(true);
            m_stop->setEnabled(false);
            m_status->setText(exitCode == 0 ? tr("probe done") : description);
            emit probeFinished(exitCode);
        });
}

bool ScalingProbePanel::start(const QString& configPath, const QString& rankCounts, int steps,
    const QString& runsFolder, QString* outDir, QString* error)
{
    if (runsFolder.isEmpty()) {
        *error = tr("choose a runs folder first: the probe's runs go there");
        return false;
    }
    const QString stem = QFileInfo(configPath).completeBaseName();
    *outDir =
        QDir(runsFolder)
            .filePath(
                QStringLiteral("scaling-%1-%2")
                    .arg(stem,
                        QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"))));
    if (!m_launcher->startCli({QStringLiteral("scaling"), configPath, QStringLiteral("--nproc"),
                                  rankCounts, QStringLiteral("--steps"), QString::number(steps),
                                  QStringLiteral("--out"), *outDir},
            error))
        return false;
    m_config->setText(configPath);
    m_counts->setText(rankCounts);
    m_steps->setValue(steps);
    m_run->setEnabled(false);
    m_stop->setEnabled(true);
    m_status->setText(tr("probe running"));
    emit probeStarted(*outDir);
    return true;
}

void ScalingProbePanel::startFromForm()
{
    QString outDir, error;
    if (!start(m_config->text().trimmed(), m_counts->text().trimmed(), m_steps->value(),
            m_runsFolder, &outDir, &error)) {
        m_status->setText(tr("not started: %1").arg(error));
        emit startRefused(error);
    }
}

} // namespace tb::ui
