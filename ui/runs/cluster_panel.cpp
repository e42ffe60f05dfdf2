#include "runs/cluster_panel.h"

#include "common/atomic_file.h"
#include "planner/table_view.h"
#include "runs/cluster_hosts_model.h"
#include "runs/node_state_model.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QTableView>
#include <QTemporaryDir>
#include <QVBoxLayout>

namespace tb::ui {

namespace {

// The one key and known hosts file every picked host uses (the launch takes
// one of each), else why there is none.
QString sharedSshFiles(
    const std::vector<ClusterHostsModel::Node>& nodes, std::string* key, std::string* knownHosts)
{
    *key = nodes.front().target.identityFile;
    *knownHosts = nodes.front().target.knownHostsFile;
    for (const ClusterHostsModel::Node& node : nodes) {
        if (node.target.identityFile != *key || node.target.knownHostsFile != *knownHosts)
            return QObject::tr(
                "%1 and %2 use different keys or known hosts files; a launch uses one of each "
                "(set them alike on the Hosts page)")
                .arg(QString::fromStdString(nodes.front().target.describe()),
                    QString::fromStdString(node.target.describe()));
    }
    return {};
}

} // namespace

ClusterPanel::ClusterPanel(QWidget* parent)
    : QGroupBox(tr("On several machines over SSH (hosts from the Hosts page)"), parent)
    , m_hosts(new ClusterHostsModel(this))
    , m_nodes(new NodeStateModel(this))
{
    setObjectName(QStringLiteral("clusterPanel"));
    setCheckable(true);
    setChecked(false);
    setToolTip(
        tr("Checked: Start runs tunebench-cli launch --hostfile on the picked hosts, after a "
           "preflight of every one; unchecked: on this machine"));
    // Unchecked, the box is its title only: the page keeps its room for a
    // run on this machine.
    auto* body = new QWidget(this);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(6, 2, 6, 2);
    outer->addWidget(body);
    body->setVisible(false);
    connect(this, &QGroupBox::toggled, body, &QWidget::setVisible);
    auto* layout = new QGridLayout(body);
    layout->setContentsMargins(0, 0, 0, 0);
    m_hostsTable = makeResultTable(this, m_hosts);
    m_hostsTable->setObjectName(QStringLiteral("clusterHosts"));
    m_hostsTable->setSelectionMode(QAbstractItemView::NoSelection);
    m_hostsTable->setEditTriggers(QAbstractItemView::AllEditTriggers);
    m_hostsTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_hostsTable->horizontalHeader()->setStretchLastSection(true);
    m_nodesTable = makeResultTable(this, m_nodes);
    m_nodesTable->setObjectName(QStringLiteral("nodeStates"));
    m_nodesTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_nodesTable->horizontalHeader()->setStretchLastSection(true);
    m_nodesTable->setWordWrap(true);
    m_trainerArguments = new QLineEdit(this);
    m_trainerArguments->setObjectName(QStringLiteral("trainerArguments"));
    m_trainerArguments->setPlaceholderText(tr("for every rank after the config, e.g. --threads 4"));
    layout->addWidget(new QLabel(tr("Machines (the first picked is node 0)"), this), 0, 0);
    layout->addWidget(new QLabel(tr("Nodes"), this), 0, 1);
    layout->addWidget(m_hostsTable, 1, 0);
    layout->addWidget(m_nodesTable, 1, 1);
    m_sync =
        new QCheckBox(tr("Copy the run config, model and data to every node first (--sync)"), this);
    m_sync->setToolTip(
        tr("Over SFTP, to the same paths; files already equal are skipped, an interrupted "
           "copy goes on"));
    auto* trainerRow = new QHBoxLayout;
    trainerRow->addWidget(new QLabel(tr("Trainer arguments"), this));
    trainerRow->addWidget(m_trainerArguments, 1);
    trainerRow->addWidget(m_sync);
    layout->addLayout(trainerRow, 2, 0, 1, 2);
    layout->setColumnStretch(0, 2);
    layout->setColumnStretch(1, 3);
    // The tables scroll; the charts below keep most of the page.
    m_hostsTable->setMaximumHeight(130);
    m_nodesTable->setMaximumHeight(130);
    connect(
        m_nodes, &QAbstractItemModel::dataChanged, m_nodesTable, &QTableView::resizeRowsToContents);
}

ClusterPanel::~ClusterPanel() = default;

void ClusterPanel::setInventory(HostsModel* inventory)
{
    m_hosts->setInventory(inventory);
}

void ClusterPanel::setTrainerArguments(const QStringList& arguments)
{
    QStringList quoted;
    for (const QString& argument : arguments)
        quoted << (argument.contains(QLatin1Char(' '))
                ? QLatin1Char('"') + argument + QLatin1Char('"')
                : argument);
    m_trainerArguments->setText(quoted.join(QLatin1Char(' ')));
}

void ClusterPanel::setSync(bool sync)
{
    m_sync->setChecked(sync);
}

std::optional<QStringList> ClusterPanel::launchArguments(const QString& configPath, QString* error)
{
    const std::vector<ClusterHostsModel::Node> nodes = m_hosts->pickedNodes();
    if (nodes.empty()) {
        *error = tr("pick at least one host (add SSH hosts on the Hosts page)");
        return std::nullopt;
    }
    std::string key, knownHosts;
    if (const QString different = sharedSshFiles(nodes, &key, &knownHosts); !different.isEmpty()) {
        *error = different;
        return std::nullopt;
    }
    const QString trainer = m_trainerArguments->text().trimmed();
    const QStringList trainerArguments = QProcess::splitCommand(trainer);
    if (!trainer.isEmpty() && trainerArguments.isEmpty()) {
        *error =
            tr("trainer arguments: cannot split '%1' into words (an unclosed quote?)").arg(trainer);
        return std::nullopt;
    }
    m_hostfileDir = std::make_unique<QTemporaryDir>();
    m_hostfile = m_hostfileDir->filePath(QStringLiteral("hostfile"));
    const common::Status written = m_hostfileDir->isValid()
        ? common::writeFileAtomic(m_hostfile.toStdString(), hostfileText(nodes).toStdString())
        : common::Status(common::Error{"no temporary folder for the hostfile", {}});
    if (!written) {
        *error = QString::fromStdString(written.error().toString());
        return std::nullopt;
    }
    QStringList arguments{QStringLiteral("launch"), configPath, QStringLiteral("--hostfile"),
        m_hostfile, QStringLiteral("--status-json")};
    if (!key.empty())
        arguments << QStringLiteral("--ssh-key") << QString::fromStdString(key);
    if (!knownHosts.empty())
        arguments << QStringLiteral("--known-hosts") << QString::fromStdString(knownHosts);
    if (m_sync->isChecked())
        arguments << QStringLiteral("--sync");
    if (!trainerArguments.isEmpty())
        arguments << QStringLiteral("--") << trainerArguments;
    QStringList hosts;
    for (const ClusterHostsModel::Node& node : nodes)
        hosts << QString::fromStdString(node.target.describe());
    m_nodes->reset(hosts);
    m_master = nodes.front().target;
    return arguments;
}

} // namespace tb::ui
