#include "monitor/monitor_page.h"

#include "monitor/registry_model.h"
#include "monitor/remote_follower.h"
#include "planner/table_view.h"
#include "remote/remote_registry.h"
#include "remote/remote_run_control.h"
#include "remote/ssh_session.h"
#include "runs/run_launcher.h"
#include "runs/run_view.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QThread>
#include <QVBoxLayout>

namespace tb::ui {

namespace {

using RegistryResult = common::Result<std::vector<launch::RegistryEntry>>;

// On the thread pool: connecting and the command there block.
RegistryResult readRegistry(const remote::SshTarget& target, const std::string& remoteCli)
{
    common::Result<std::unique_ptr<remote::SshSession>> session =
        remote::SshSession::connect(target);
    if (!session)
        return session.error();
    return remote::remoteRegistry(**session, remoteCli);
}

// On the thread pool, over a connection of its own: the follower's may be
// waiting on an SFTP server that stopped answering (a hung file system),
// and a stop must not wait behind it.
common::Result<long long> stopOverNewConnection(
    const remote::SshTarget& target, const metrics::RunHistory& history)
{
    common::Result<std::unique_ptr<remote::SshSession>> session =
        remote::SshSession::connect(target);
    if (!session)
        return session.error();
    return remote::stopRemoteRun(**session, history);
}

// The SSH target the page's fields name.
common::Result<remote::SshTarget> targetOf(
    const QString& host, int port, const QString& identity, const QString& knownHosts)
{
    const common::Result<remote::SshTarget> parsed =
        remote::parseSshTarget(host.trimmed().toStdString());
    if (!parsed)
        return parsed.error();
    remote::SshTarget target = parsed.value();
    target.port = port;
    target.identityFile = identity.trimmed().toStdString();
    target.knownHostsFile = knownHosts.trimmed().toStdString();
    return target;
}

} // namespace

MonitorPage::MonitorPage(QWidget* parent)
    : QWidget(parent)
    , m_registry(new RegistryModel(this))
    , m_jobs(new JobRunner(this))
{
    buildLayout();
    m_follower = new RemoteFollower;
    connect(m_follower, &RemoteFollower::connected, this, &MonitorPage::onConnected);
    connect(m_follower, &RemoteFollower::connectFailed, this, &MonitorPage::onConnectFailed);
    connect(m_follower, &RunFollower::linesRead, this, &MonitorPage::onLinesRead);
    connect(m_follower, &RunFollower::readFailed, this, &MonitorPage::onReadFailed);
    // A connect in progress finishes (or times out) before the thread can end.
    m_reader =
        std::make_unique<WorkerThread<RemoteFollower>>(m_follower, QStringLiteral("ssh monitor"),
            this, &RemoteFollower::disconnectFromHost, WorkerThread<RemoteFollower>::Stop::Queued);
    updateButtons();
}

MonitorPage::~MonitorPage()
{
    m_follower->interrupt(); // a read waiting on a hung host ends now
    m_reader.reset();
}

void MonitorPage::buildLayout()
{
    auto* layout = new QVBoxLayout(this);
    auto* form = new QGridLayout;
    m_host = new QLineEdit(this);
    m_host->setObjectName(QStringLiteral("host"));
    m_host->setPlaceholderText(tr("[user@]host, e.g. azureuser@10.0.0.4"));
    m_port = new QSpinBox(this);
    m_port->setRange(1, 65535);
    m_port->setValue(22);
    m_runDir = new QLineEdit(this);
    m_runDir->setObjectName(QStringLiteral("runDir"));
    m_runDir->setPlaceholderText(tr("the run folder there (output.dir of its run config)"));
    m_identity = new QLineEdit(this);
    m_identity->setPlaceholderText(tr("default: ssh-agent, then the keys in ~/.ssh"));
    m_knownHosts = new QLineEdit(this);
    m_knownHosts->setPlaceholderText(
        tr("default: ~/.ssh/known_hosts (the host's key must be there)"));
    form->addWidget(new QLabel(tr("Host"), this), 0, 0);
    form->addWidget(m_host, 0, 1);
    form->addWidget(new QLabel(tr("Port"), this), 0, 2);
    form->addWidget(m_port, 0, 3);
    form->addWidget(new QLabel(tr("Run folder"), this), 0, 4);
    form->addWidget(m_runDir, 0, 5);
    form->addWidget(new QLabel(tr("Key"), this), 1, 0);
    form->addWidget(m_identity, 1, 1);
    form->addWidget(new QLabel(tr("Known hosts"), this), 1, 4);
    form->addWidget(m_knownHosts, 1, 5);
    m_remoteCli = new QLineEdit(this);
    m_remoteCli->setObjectName(QStringLiteral("remoteCli"));
    m_remoteCli->setPlaceholderText(tr("default: %1 (the path here)").arg(RunLauncher::findCli()));
    form->addWidget(new QLabel(tr("tunebench-cli there"), this), 2, 0);
    form->addWidget(m_remoteCli, 2, 1);
    form->setColumnStretch(1, 2);
    form->setColumnStretch(5, 3);

    auto* buttons = new QHBoxLayout;
    m_connect = new QPushButton(tr("Connect"), this);
    m_disconnect = new QPushButton(tr("Disconnect"), this);
    m_stop = new QPushButton(tr("Stop run"), this);
    m_stop->setToolTip(tr("SIGTERM to rank 0's trainer there: it checkpoints and every rank "
                          "ends with status stopped"));
    connect(m_connect, &QPushButton::clicked, this, &MonitorPage::connectFromForm);
    connect(m_disconnect, &QPushButton::clicked, this, &MonitorPage::disconnectFromHost);
    connect(m_stop, &QPushButton::clicked, this, &MonitorPage::stopRun);
    m_status = new QLabel(tr("Not connected."), this);
    m_status->setObjectName(QStringLiteral("monitorStatus"));
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->setTextFormat(Qt::PlainText); // messages quote what the host sent
    m_status->setWordWrap(true);
    buttons->addWidget(m_connect);
    buttons->addWidget(m_disconnect);
    buttons->addWidget(m_stop);
    m_listRuns = new QPushButton(tr("List runs"), this);
    m_listRuns->setToolTip(
        tr("The host's run registry: runs started there detached or across hosts"));
    m_followRun = new QPushButton(tr("Follow picked run"), this);
    connect(m_listRuns, &QPushButton::clicked, this, &MonitorPage::listRunsFromForm);
    connect(m_followRun, &QPushButton::clicked, this, &MonitorPage::followPickedRun);
    buttons->addSpacing(16);
    buttons->addWidget(m_listRuns);
    buttons->addWidget(m_followRun);
    buttons->addWidget(m_status, 1);

    layout->addLayout(form);
    layout->addLayout(buttons);
    m_registryTable = makeResultTable(this, m_registry);
    m_registryTable->setObjectName(QStringLiteral("registryTable"));
    m_registryTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_registryTable->horizontalHeader()->setStretchLastSection(true);
    m_registryTable->setMaximumHeight(160);
    connect(m_registryTable, &QTableView::doubleClicked, this, &MonitorPage::followPickedRun);
    layout->addWidget(m_registryTable);
    m_view = new RunView(this);
    layout->addWidget(m_view, 1);
}

void MonitorPage::connectFromForm()
{
    connectTo(m_host->text(), m_port->value(), m_identity->text(), m_knownHosts->text(),
        m_runDir->text());
}

void MonitorPage::connectTo(const QString& host, int port, const QString& identity,
    const QString& knownHosts, const QString& runDir)
{
    m_host->setText(host);
    m_port->setValue(port);
    m_identity->setText(identity);
    m_knownHosts->setText(knownHosts);
    m_runDir->setText(runDir);
    if (runDir.trimmed().isEmpty()) {
        setStatus(tr("Give the run folder on that machine."), true);
        return;
    }
    ++m_generation;
    m_connected = false;
    m_connecting = true;
    m_followedHost.reset();
    if (common::Result<remote::SshTarget> target = targetOf(host, port, identity, knownHosts))
        m_followedHost = std::move(target).value();
    m_view->reset();
    setStatus(tr("Connecting to %1:%2 …").arg(host.trimmed()).arg(port), false);
    QMetaObject::invokeMethod(m_follower, "connectTo", Qt::QueuedConnection, Q_ARG(QString, host),
        Q_ARG(int, port), Q_ARG(QString, identity), Q_ARG(QString, knownHosts),
        Q_ARG(QString, runDir));
    updateButtons();
    emit connectionChanged(false);
}

void MonitorPage::listRunsFromForm()
{
    listRuns(m_host->text(), m_port->value(), m_identity->text(), m_knownHosts->text(),
        m_remoteCli->text());
}

void MonitorPage::listRuns(const QString& host, int port, const QString& identity,
    const QString& knownHosts, const QString& remoteCli)
{
    m_host->setText(host);
    m_port->setValue(port);
    m_identity->setText(identity);
    m_knownHosts->setText(knownHosts);
    m_remoteCli->setText(remoteCli);
    const common::Result<remote::SshTarget> parsed = targetOf(host, port, identity, knownHosts);
    if (!parsed) {
        setStatus(QString::fromStdString(parsed.error().toString()), true);
        emit registryListed(m_status->text());
        return;
    }
    const remote::SshTarget target = parsed.value();
    const QString cli =
        remoteCli.trimmed().isEmpty() ? RunLauncher::findCli() : remoteCli.trimmed();
    setStatus(tr("Reading the run registry of %1 …").arg(QString::fromStdString(target.describe())),
        false);
    const std::string cliPath = cli.toStdString();
    const auto listed = [this, target](const RegistryResult& result) {
        const QString where = QString::fromStdString(target.describe());
        if (result) {
            m_registry->setEntries(*result);
            setStatus(result->empty()
                    ? tr("No runs in the registry of %1.").arg(where)
                    : tr("%n run part(s) in the registry of %1; pick one to follow.", nullptr,
                        int(result->size()))
                          .arg(where),
                false);
        } else {
            setStatus(QString::fromStdString(result.error().toString()), true);
        }
        updateButtons();
        emit registryListed(result ? QString() : m_status->text());
    };
    m_jobs->run(
        QStringLiteral("registry"), [target, cliPath] { return readRegistry(target, cliPath); },
        listed);
    updateButtons();
}

bool MonitorPage::followRegistryRow(int row, QString* error)
{
    if (row < 0 || row >= m_registry->rowCount()) {
        *error = tr("pick a run in the list");
        return false;
    }
    const launch::RegistryEntry& entry = m_registry->entries()[std::size_t(row)];
    if (entry.nodeRank != 0) {
        *error = tr("this is node %1's part of run %2; rank 0 writes the events on node 0: list "
                    "that host's runs")
                     .arg(entry.nodeRank)
                     .arg(QString::fromStdString(entry.runId));
        return false;
    }
    connectTo(m_host->text(), m_port->value(), m_identity->text(), m_knownHosts->text(),
        QString::fromStdString(entry.runDir));
    return true;
}

void MonitorPage::followPickedRun()
{
    QString error;
    if (!followRegistryRow(m_registryTable->currentIndex().row(), &error))
        setStatus(error, true);
}

void MonitorPage::disconnectFromHost()
{
    ++m_generation; // whatever is still in flight is dropped
    QMetaObject::invokeMethod(
        m_follower, &RemoteFollower::disconnectFromHost, Qt::QueuedConnection);
    const bool was = m_connected || m_connecting;
    m_connected = false;
    m_connecting = false;
    if (was)
        setStatus(tr("Disconnected; the run goes on."), false);
    updateButtons();
    emit connectionChanged(false);
}

void MonitorPage::stopRun()
{
    if (!m_connected || !m_followedHost)
        return;
    m_stopping = true;
    updateButtons();
    const remote::SshTarget target = *m_followedHost;
    const metrics::RunHistory history = m_view->history();
    m_jobs->run(
        QStringLiteral("stop"),
        [target, history] { return stopOverNewConnection(target, history); },
        [this](const common::Result<long long>& pid) {
            onStopFinished(
                pid ? QString() : QString::fromStdString(pid.error().message), pid ? *pid : -1);
        });
}

void MonitorPage::onConnected(quint64 generation, const QString& eventsFile)
{
    if (generation != m_generation)
        return;
    m_connecting = false;
    m_connected = true;
    setStatus(tr("Following %1").arg(eventsFile), false);
    updateButtons();
    emit connectionChanged(true);
}

void MonitorPage::onConnectFailed(quint64 generation, const QString& message)
{
    if (generation != m_generation)
        return;
    m_connecting = false;
    setStatus(message, true);
    updateButtons();
    emit connectionChanged(false);
}

void MonitorPage::onLinesRead(quint64 generation, const QVector<tb::metrics::StreamItem>& items)
{
    if (generation != m_generation)
        return;
    m_view->addLines(items);
    updateButtons();
    emit historyChanged();
}

void MonitorPage::onReadFailed(quint64 generation, const QString& message)
{
    if (generation != m_generation)
        return;
    setStatus(tr("Stopped following: %1").arg(message), true);
    updateButtons();
    emit historyChanged();
}

void MonitorPage::onStopFinished(const QString& failure, qlonglong pid)
{
    m_stopping = false;
    m_view->addNote(failure.isEmpty() ? tr("[stop] SIGTERM sent to process %1").arg(pid)
                                      : tr("[stop] not sent: %1").arg(failure));
    updateButtons();
    emit stopFinished(failure);
}

void MonitorPage::setStatus(const QString& text, bool error)
{
    m_status->setText(text);
    m_status->setStyleSheet(error ? QStringLiteral("color: #b41e1e;") : QString());
}

void MonitorPage::updateButtons()
{
    m_connect->setEnabled(!m_connecting);
    m_listRuns->setEnabled(!m_jobs->isRunning(QStringLiteral("registry")));
    m_followRun->setEnabled(!m_connecting && m_registry->rowCount() > 0);
    m_disconnect->setEnabled(m_connected || m_connecting);
    m_stop->setEnabled(canStop());
}

bool MonitorPage::canStop() const
{
    const metrics::RunHistory& run = m_view->history();
    return m_connected && !m_stopping && run.start() && !run.end();
}

const metrics::RunHistory& MonitorPage::history() const
{
    return m_view->history();
}

QString MonitorPage::statusText() const
{
    return m_status->text();
}

} // namespace tb::ui
