#include "runs/runs_page.h"

#include "config/config_loader.h"
#include "runs/local_run_control.h"
#include "runs/run_charts.h"
#include "runs/run_follower.h"
#include "runs/run_launcher.h"
#include "runs/run_view.h"

#ifdef TB_HAVE_SSH
#include "monitor/remote_follower.h"
#include "runs/cluster_panel.h"
#include "runs/node_state_model.h"
#endif

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>

namespace tb::ui {

namespace {

constexpr int kMaxOutputLines = 5000;

} // namespace

RunsPage::RunsPage(QWidget* parent)
    : QWidget(parent)
    , m_launcher(new RunLauncher(this))
{
    buildLayout();

#ifdef TB_HAVE_SSH
    // One follower for both: a folder here, or node 0's over SFTP.
    auto* remote = new RemoteFollower;
    connect(remote, &RemoteFollower::connected, this,
        [this](quint64 generation, const QString& events) {
            if (generation == m_generation)
                m_folderLabel->setText(tr("Following %1 on node 0 over SFTP").arg(events));
        });
    connect(remote, &RemoteFollower::connectFailed, this, &RunsPage::onReadFailed);
    m_follower = remote;
    m_remoteFollower = remote;
#else
    m_follower = new RunFollower;
#endif
    connect(m_follower, &RunFollower::linesRead, this, &RunsPage::onLinesRead);
    connect(m_follower, &RunFollower::readFailed, this, &RunsPage::onReadFailed);
    m_reader =
        std::make_unique<WorkerThread<RunFollower>>(m_follower, QStringLiteral("run event reader"),
            this, &RunFollower::stop, WorkerThread<RunFollower>::Stop::Blocking);

    connect(m_launcher, &RunLauncher::outputLine, this, &RunsPage::onLauncherLine);
#ifdef TB_HAVE_SSH
    connect(m_launcher, &RunLauncher::statusLine, this, &RunsPage::onLauncherStatus);
#endif
    connect(m_launcher, &RunLauncher::finished, this, &RunsPage::onLauncherFinished);
    updateButtons();
}

RunsPage::~RunsPage()
{
    // The launcher asks a running run to stop as it goes; its signals must
    // not reach this half-destroyed page.
    disconnect(m_launcher, nullptr, this, nullptr);
    delete m_launcher;
#ifdef TB_HAVE_SSH
    m_remoteFollower->interrupt(); // a read waiting on a hung node 0 ends now
#endif
    m_reader.reset();
}

void RunsPage::buildLayout()
{
    auto* layout = new QVBoxLayout(this);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Run config"), this));
    m_configPath = new QLineEdit(this);
    m_configPath->setObjectName(QStringLiteral("configPath"));
    m_configPath->setPlaceholderText(tr("RUN.yaml (presets/recipes has one per method)"));
    controls->addWidget(m_configPath, 1);
    auto* browse = new QToolButton(this);
    browse->setText(QStringLiteral("…"));
    browse->setToolTip(tr("Choose a run config"));
    connect(browse, &QToolButton::clicked, this, &RunsPage::browseConfig);
    controls->addWidget(browse);
    controls->addWidget(new QLabel(tr("Ranks"), this));
    m_ranks = new QSpinBox(this);
    m_ranks->setObjectName(QStringLiteral("ranks"));
    m_ranks->setRange(1, 64);
    m_ranks->setToolTip(tr("Processes on this machine (tunebench-cli launch --nproc); the "
                           "config's distributed section says how they share the work"));
    controls->addWidget(m_ranks);
    m_start = new QPushButton(tr("Start"), this);
    m_start->setObjectName(QStringLiteral("startRun"));
    connect(m_start, &QPushButton::clicked, this, &RunsPage::startFromForm);
    controls->addWidget(m_start);
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName(QStringLiteral("stopRun"));
    connect(m_stop, &QPushButton::clicked, this, [this] { stopRun(); });
    controls->addWidget(m_stop);
    controls->addSpacing(24);
    auto* open = new QPushButton(tr("Open run folder…"), this);
    open->setObjectName(QStringLiteral("openRunFolder"));
    connect(open, &QPushButton::clicked, this, &RunsPage::browseRunFolder);
    controls->addWidget(open);
    layout->addLayout(controls);

#ifdef TB_HAVE_SSH
    m_cluster = new ClusterPanel(this);
    connect(m_cluster, &QGroupBox::toggled, m_ranks, &QWidget::setDisabled);
    layout->addWidget(m_cluster);
#endif
    m_folderLabel = new QLabel(tr("No run followed. Start one, or open a run folder."), this);
    m_folderLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_folderLabel);
    m_view = new RunView(this);
    m_output = new QPlainTextEdit(m_view->tabs());
    m_output->setObjectName(QStringLiteral("launcherOutput"));
    m_output->setReadOnly(true);
    m_output->setMaximumBlockCount(kMaxOutputLines);
    m_output->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_view->tabs()->addTab(m_output, tr("Launcher output"));
    layout->addWidget(m_view, 1);
}

void RunsPage::followRunFolder(const QString& dir)
{
    m_awaitingNodeZero = false; // the user's choice wins
    m_folder = QDir(dir).absolutePath();
    m_view->reset();
    const QString events = QDir(m_folder).filePath(QStringLiteral("events.jsonl"));
    m_folderLabel->setText(tr("Following %1").arg(QDir::toNativeSeparators(events)));
    ++m_generation;
    QMetaObject::invokeMethod(m_follower, "follow", Qt::QueuedConnection, Q_ARG(QString, events));
    updateButtons();
}

bool RunsPage::startRun(const QString& configPath, int ranks, QString* error)
{
    const common::Result<config::RunConfig> loaded =
        config::loadRunConfig(configPath.toStdString());
    if (!loaded) {
        *error = QString::fromStdString(loaded.error().toString());
        return false;
    }
    if (!m_launcher->start(configPath, ranks, error))
        return false;
    m_multiNode = false;
    m_configPath->setText(configPath);
    m_ranks->setValue(ranks);
    m_output->clear();
    m_output->appendPlainText(
        tr("— %1 launch %2 --nproc %3").arg(m_launcher->cliProgram(), configPath).arg(ranks));
    followRunFolder(QString::fromStdString(loaded->output.dir));
    updateButtons();
    return true;
}

void RunsPage::onLauncherLine(const QString& line)
{
    m_output->appendPlainText(line);
}

#ifdef TB_HAVE_SSH
void RunsPage::onLauncherStatus(const QString& line)
{
    const common::Result<remote::LauncherStatus> status =
        remote::parseLauncherStatus(line.toStdString());
    if (!status) {
        m_output->appendPlainText(QString::fromStdString(status.error().message));
        return;
    }
    NodeStateModel* nodes = m_cluster->nodesModel();
    if (nodes->apply(*status) && m_awaitingNodeZero && !nodes->runFolder().isEmpty())
        followRemoteFolder(nodes->runFolder());
}
#endif

void RunsPage::onLauncherFinished(int exitCode, const QString& description)
{
    m_output->appendPlainText(QStringLiteral("— %1").arg(description));
#ifdef TB_HAVE_SSH
    if (m_multiNode) {
        NodeStateModel* nodes = m_cluster->nodesModel();
        nodes->launcherFinished(exitCode);
        if (m_awaitingNodeZero)
            m_folderLabel->setText(
                tr("The launch ended before node 0 ran; no run folder to follow."));
        if (!nodes->problems().isEmpty())
            m_view->setSummaryError(tr("The preflight found %n problem(s); nothing was started:\n",
                                        nullptr, int(nodes->problems().size()))
                + nodes->problems().join(QLatin1Char('\n')));
    }
#endif
    updateButtons();
    emit runFinished(exitCode);
}

#ifdef TB_HAVE_SSH
void RunsPage::setHostInventory(HostsModel* inventory)
{
    m_cluster->setInventory(inventory);
}

bool RunsPage::startMultiNodeRun(const QString& configPath, QString* error)
{
    if (m_launcher->isRunning()) {
        *error = tr("a run is already going; stop it first");
        return false;
    }
    const common::Result<config::RunConfig> loaded =
        config::loadRunConfig(configPath.toStdString());
    if (!loaded) {
        *error = QString::fromStdString(loaded.error().toString());
        return false;
    }
    const QString absolute =
        QFileInfo(configPath).absoluteFilePath(); // the same path on every node
    const std::optional<QStringList> arguments = m_cluster->launchArguments(absolute, error);
    if (!arguments
        || !m_launcher->startCli(
            *arguments, error, RunLauncher::Output::StatusOnStdout, RunLauncher::OnClose::Detach))
        return false;
    m_multiNode = true;
    m_configPath->setText(configPath);
    m_cluster->setChecked(true);
    m_output->clear();
    m_output->appendPlainText(
        QStringLiteral("— %1 %2").arg(m_launcher->cliProgram(), arguments->join(QLatin1Char(' '))));
    // Until node 0 names its folder, whatever the last run's follower still
    // sends is dropped (onLinesRead).
    QMetaObject::invokeMethod(m_follower, &RunFollower::stop, Qt::QueuedConnection);
    m_awaitingNodeZero = true;
    m_folder.clear();
    m_view->reset();
    m_folderLabel->setText(
        tr("Preflight of every node; rank 0's run folder is followed once node 0 runs."));
    updateButtons();
    return true;
}

void RunsPage::followRemoteFolder(const QString& dir)
{
    const remote::SshTarget& master = m_cluster->masterTarget();
    const QString host =
        QString::fromStdString((master.user.empty() ? "" : master.user + "@") + master.host);
    m_awaitingNodeZero = false;
    m_folder = dir;
    m_view->reset();
    m_folderLabel->setText(tr("Connecting to node 0 (%1) to follow %2 …").arg(host, dir));
    ++m_generation;
    QMetaObject::invokeMethod(m_follower, "connectTo", Qt::QueuedConnection, Q_ARG(QString, host),
        Q_ARG(int, master.port), Q_ARG(QString, QString::fromStdString(master.identityFile)),
        Q_ARG(QString, QString::fromStdString(master.knownHostsFile)), Q_ARG(QString, dir));
}
#else
void RunsPage::followRemoteFolder(const QString&) { }
#endif

QString RunsPage::stopRun()
{
    if (m_launcher->isRunning()) {
        m_launcher->stop();
        return {};
    }
    const QString failure = stopLocalRun(m_view->history());
    m_view->addNote(failure.isEmpty()
            ? tr("[stop] SIGTERM sent to process %1").arg(m_view->history().start()->pid)
            : tr("[stop] not sent: %1").arg(failure));
    return failure;
}

void RunsPage::startFromForm()
{
    QString error;
#ifdef TB_HAVE_SSH
    if (m_cluster->isChecked()) {
        if (!startMultiNodeRun(m_configPath->text().trimmed(), &error))
            m_view->setSummaryError(tr("Could not start: %1").arg(error));
        return;
    }
#endif
    if (!startRun(m_configPath->text().trimmed(), m_ranks->value(), &error))
        m_view->setSummaryError(tr("Could not start: %1").arg(error));
}

void RunsPage::browseConfig()
{
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Run config"), m_configPath->text(), tr("Run configs (*.yaml *.yml)"));
    if (!path.isEmpty())
        m_configPath->setText(path);
}

void RunsPage::browseRunFolder()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Run folder"), m_folder);
    if (!dir.isEmpty())
        followRunFolder(dir);
}

bool RunsPage::isCurrent(quint64 generation) const
{
    // A multi-node run follows nothing until node 0 runs.
    return generation == m_generation && !m_awaitingNodeZero;
}

void RunsPage::onLinesRead(quint64 generation, const QVector<tb::metrics::StreamItem>& items)
{
    if (!isCurrent(generation))
        return; // from the folder followed before
    m_view->addLines(items);
    updateButtons();
    emit historyChanged();
}

void RunsPage::onReadFailed(quint64 generation, const QString& message)
{
    if (!isCurrent(generation))
        return;
    m_view->addLines(
        {metrics::StreamItem{0, 0, std::nullopt, message.toStdString() + " (stopped following)"}});
    updateButtons();
    emit historyChanged();
}

void RunsPage::updateButtons()
{
    const bool running = m_launcher->isRunning();
    m_start->setEnabled(!running);
    const QString notStoppable = running ? QString() : whyNotStoppable(m_view->history());
    m_stop->setEnabled(notStoppable.isEmpty());
    m_stop->setToolTip(notStoppable.isEmpty()
            ? tr("Graceful stop: every rank checkpoints and ends with status stopped")
            : tr("Cannot stop: %1").arg(notStoppable));
}

bool RunsPage::canStop() const
{
    return m_stop->isEnabled();
}

const metrics::RunHistory& RunsPage::history() const
{
    return m_view->history();
}

RunCharts* RunsPage::charts() const
{
    return m_view->charts();
}

QString RunsPage::summaryText() const
{
    return m_view->summaryText();
}

QStringList RunsPage::messageTexts() const
{
    return m_view->messageTexts();
}

} // namespace tb::ui
