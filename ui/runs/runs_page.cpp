#include "runs/runs_page.h"

#include "config/config_loader.h"
#include "runs/local_run_control.h"
#include "runs/run_charts.h"
#include "runs/run_follower.h"
#include "runs/run_launcher.h"
#include "runs/run_summary.h"

#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>

namespace tb::ui {

namespace {

constexpr int kMaxOutputLines = 5000;

QString messageLine(const metrics::RunMessage& message)
{
    return QStringLiteral("[%1, after step %2] %3")
        .arg(QString::fromStdString(message.level))
        .arg(message.afterStep)
        .arg(QString::fromStdString(message.text));
}

QColor messageColor(const std::string& level)
{
    if (level == "error" || level == "unreadable")
        return QColor(180, 30, 30);
    if (level == "warning")
        return QColor(160, 100, 0);
    return QColor();
}

} // namespace

RunsPage::RunsPage(QWidget* parent)
    : QWidget(parent)
    , m_launcher(new RunLauncher(this))
{
    buildLayout();

    m_readerThread = new QThread(this);
    m_readerThread->setObjectName(QStringLiteral("run event reader"));
    m_follower = new RunFollower;
    m_follower->moveToThread(m_readerThread);
    connect(m_readerThread, &QThread::finished, m_follower, &QObject::deleteLater);
    connect(m_follower, &RunFollower::linesRead, this, &RunsPage::onLinesRead);
    connect(m_follower, &RunFollower::readFailed, this, &RunsPage::onReadFailed);
    m_readerThread->start();

    connect(m_launcher, &RunLauncher::outputLine, this, [this](const QString& line) {
        m_output->appendPlainText(line);
    });
    connect(m_launcher, &RunLauncher::finished, this,
        [this](int exitCode, const QString& description) {
            m_output->appendPlainText(QStringLiteral("— %1").arg(description));
            updateButtons();
            emit runFinished(exitCode);
        });
    updateButtons();
}

RunsPage::~RunsPage()
{
    QMetaObject::invokeMethod(m_follower, &RunFollower::stop, Qt::BlockingQueuedConnection);
    m_readerThread->quit();
    m_readerThread->wait();
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

    m_folderLabel = new QLabel(tr("No run followed. Start one, or open a run folder."), this);
    m_folderLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_folderLabel);
    m_summary = new QLabel(this);
    m_summary->setObjectName(QStringLiteral("runSummary"));
    m_summary->setWordWrap(true);
    QFont bold = m_summary->font();
    bold.setBold(true);
    m_summary->setFont(bold);
    layout->addWidget(m_summary);

    auto* splitter = new QSplitter(Qt::Vertical, this);
    m_charts = new RunCharts(splitter);
    auto* tabs = new QTabWidget(splitter);
    m_messages = new QListWidget(tabs);
    m_messages->setObjectName(QStringLiteral("runMessages"));
    m_output = new QPlainTextEdit(tabs);
    m_output->setObjectName(QStringLiteral("launcherOutput"));
    m_output->setReadOnly(true);
    m_output->setMaximumBlockCount(kMaxOutputLines);
    m_output->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    tabs->addTab(m_messages, tr("Warnings and errors"));
    tabs->addTab(m_output, tr("Launcher output"));
    splitter->addWidget(m_charts);
    splitter->addWidget(tabs);
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);
    layout->addWidget(splitter, 1);
}

void RunsPage::followRunFolder(const QString& dir)
{
    m_folder = QDir(dir).absolutePath();
    m_history = metrics::RunHistory{};
    m_messagesShown = 0;
    m_messages->clear();
    m_charts->clearCurves();
    const QString events = QDir(m_folder).filePath(QStringLiteral("events.jsonl"));
    m_folderLabel->setText(tr("Following %1").arg(QDir::toNativeSeparators(events)));
    ++m_generation;
    QMetaObject::invokeMethod(m_follower, "follow", Qt::QueuedConnection, Q_ARG(QString, events));
    showHistory();
}

bool RunsPage::startRun(const QString& configPath, int ranks, QString* error)
{
    const common::Result<config::RunConfig> loaded = config::loadRunConfig(configPath.toStdString());
    if (!loaded) {
        *error = QString::fromStdString(loaded.error().toString());
        return false;
    }
    if (!m_launcher->start(configPath, ranks, error))
        return false;
    m_configPath->setText(configPath);
    m_ranks->setValue(ranks);
    m_output->clear();
    m_output->appendPlainText(tr("— %1 launch %2 --nproc %3")
                                  .arg(m_launcher->cliProgram(), configPath)
                                  .arg(ranks));
    followRunFolder(QString::fromStdString(loaded->output.dir));
    updateButtons();
    return true;
}

QString RunsPage::stopRun()
{
    if (m_launcher->isRunning()) {
        m_launcher->stop();
        return {};
    }
    const QString failure = stopLocalRun(m_history);
    m_messages->addItem(failure.isEmpty()
            ? tr("[stop] SIGTERM sent to process %1").arg(m_history.start()->pid)
            : tr("[stop] not sent: %1").arg(failure));
    return failure;
}

void RunsPage::startFromForm()
{
    QString error;
    if (!startRun(m_configPath->text().trimmed(), m_ranks->value(), &error)) {
        m_summary->setText(tr("Could not start: %1").arg(error));
        m_summary->setStyleSheet(QStringLiteral("color: #b41e1e;"));
    }
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

void RunsPage::onLinesRead(quint64 generation, const QVector<tb::metrics::StreamItem>& items)
{
    if (generation != m_generation)
        return; // from the folder followed before
    for (const metrics::StreamItem& item : items) {
        if (item.event)
            m_history.apply(*item.event);
        else
            m_history.addUnreadableLine(item.error);
    }
    showHistory();
    emit historyChanged();
}

void RunsPage::onReadFailed(quint64 generation, const QString& message)
{
    if (generation != m_generation)
        return;
    m_history.addUnreadableLine(message.toStdString() + " (stopped following)");
    showHistory();
    emit historyChanged();
}

void RunsPage::showHistory()
{
    m_charts->showHistory(m_history);
    const QString state = runState(m_history);
    m_summary->setStyleSheet(state == QStringLiteral("failed")
            ? QStringLiteral("color: #b41e1e;")
            : QString());
    m_summary->setText(describeRun(m_history));
    updateButtons();
    const std::vector<metrics::RunMessage>& messages = m_history.messages();
    for (; m_messagesShown < messages.size(); ++m_messagesShown) {
        const metrics::RunMessage& message = messages[m_messagesShown];
        auto* item = new QListWidgetItem(messageLine(message), m_messages);
        if (const QColor color = messageColor(message.level); color.isValid())
            item->setForeground(color);
    }
}

void RunsPage::updateButtons()
{
    const bool running = m_launcher->isRunning();
    m_start->setEnabled(!running);
    const QString notStoppable = running ? QString() : whyNotStoppable(m_history);
    m_stop->setEnabled(notStoppable.isEmpty());
    m_stop->setToolTip(notStoppable.isEmpty()
            ? tr("Graceful stop: every rank checkpoints and ends with status stopped")
            : tr("Cannot stop: %1").arg(notStoppable));
}

bool RunsPage::canStop() const
{
    return m_stop->isEnabled();
}

QString RunsPage::summaryText() const
{
    return m_summary->text();
}

QStringList RunsPage::messageTexts() const
{
    QStringList texts;
    for (int row = 0; row < m_messages->count(); ++row)
        texts << m_messages->item(row)->text();
    return texts;
}

} // namespace tb::ui
