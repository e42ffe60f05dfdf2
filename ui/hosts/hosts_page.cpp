#include "hosts/hosts_page.h"

#include "app_settings.h"
#include "hosts/hosts_model.h"
#include "planner/table_view.h"
#include "remote/ssh_session.h"

#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QVBoxLayout>

namespace tb::ui {

namespace {

using ProbeResult = common::Result<remote::HostFacts>;

// Runs on the thread pool: connecting and probing block.
ProbeResult probeEntry(const std::optional<remote::SshTarget>& target)
{
    if (!target)
        return remote::probeLocalHost();
    common::Result<std::unique_ptr<remote::SshSession>> session =
        remote::SshSession::connect(*target);
    if (!session)
        return session.error();
    return remote::probeHost(**session);
}

QString serialise(const remote::SshTarget& target)
{
    return QStringList{
        QString::fromStdString((target.user.empty() ? "" : target.user + "@") + target.host),
        QString::number(target.port), QString::fromStdString(target.identityFile),
        QString::fromStdString(target.knownHostsFile)}
        .join(QLatin1Char('|'));
}

} // namespace

HostsPage::HostsPage(QWidget* parent)
    : QWidget(parent)
    , m_model(new HostsModel(this))
    , m_jobs(new JobRunner(this))
{
    buildLayout();
    restoreHosts();
    probeAll();
}

void HostsPage::buildLayout()
{
    auto* layout = new QVBoxLayout(this);
    auto* form = new QGridLayout;
    m_host = new QLineEdit(this);
    m_host->setPlaceholderText(tr("[user@]host"));
    m_port = new QSpinBox(this);
    m_port->setRange(1, 65535);
    m_port->setValue(22);
    m_identity = new QLineEdit(this);
    m_identity->setPlaceholderText(tr("key (default: ssh-agent, ~/.ssh)"));
    m_knownHosts = new QLineEdit(this);
    m_knownHosts->setPlaceholderText(tr("known hosts (default ~/.ssh/known_hosts)"));
    auto* add = new QPushButton(tr("Add host"), this);
    connect(add, &QPushButton::clicked, this, &HostsPage::addFromForm);
    form->addWidget(new QLabel(tr("Host"), this), 0, 0);
    form->addWidget(m_host, 0, 1);
    form->addWidget(new QLabel(tr("Port"), this), 0, 2);
    form->addWidget(m_port, 0, 3);
    form->addWidget(m_identity, 0, 4);
    form->addWidget(m_knownHosts, 0, 5);
    form->addWidget(add, 0, 6);
    form->setColumnStretch(1, 2);
    form->setColumnStretch(4, 2);
    form->setColumnStretch(5, 2);
    layout->addLayout(form);

    auto* buttons = new QHBoxLayout;
    auto* probe = new QPushButton(tr("Probe all"), this);
    auto* remove = new QPushButton(tr("Remove host"), this);
    connect(probe, &QPushButton::clicked, this, &HostsPage::probeAll);
    connect(remove, &QPushButton::clicked, this, &HostsPage::removeSelectedHost);
    buttons->addWidget(probe);
    buttons->addWidget(remove);
    buttons->addStretch(1);
    layout->addLayout(buttons);

    m_table = makeResultTable(this, m_model);
    m_table->setObjectName(QStringLiteral("hostsTable"));
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(m_table, 1);
}

bool HostsPage::addHost(const QString& host, int port, const QString& identity,
    const QString& knownHosts, QString* error)
{
    common::Result<remote::SshTarget> parsed = remote::parseSshTarget(host.trimmed().toStdString());
    if (!parsed) {
        *error = QString::fromStdString(parsed.error().toString());
        return false;
    }
    remote::SshTarget target = parsed.value();
    target.port = port;
    target.identityFile = identity.trimmed().toStdString();
    target.knownHostsFile = knownHosts.trimmed().toStdString();
    if (!m_model->addHost(target)) {
        *error = tr("%1 is already listed").arg(QString::fromStdString(target.describe()));
        return false;
    }
    saveHosts();
    probe(m_model->rowCount() - 1);
    return true;
}

void HostsPage::addFromForm()
{
    QString error;
    if (!addHost(m_host->text(), m_port->value(), m_identity->text(), m_knownHosts->text(), &error))
        QMessageBox::warning(this, tr("Add host"), error);
}

void HostsPage::removeSelectedHost()
{
    const QModelIndex current = m_table->currentIndex();
    if (!current.isValid() || m_model->entries()[std::size_t(current.row())].probing)
        return;
    m_model->removeRow(current.row());
    saveHosts();
}

void HostsPage::probeAll()
{
    for (int row = 0; row < m_model->rowCount(); ++row)
        probe(row);
}

void HostsPage::probe(int row)
{
    const HostsModel::Entry& entry = m_model->entries()[std::size_t(row)];
    if (entry.probing)
        return;
    m_model->setProbing(row);
    const QString label = HostsModel::label(entry);
    const auto target = entry.target;
    m_jobs->run(
        label, [target] { return probeEntry(target); },
        [this, label](const ProbeResult& result) {
            // Rows may have moved while the probe ran: find this host again.
            for (int current = 0; current < m_model->rowCount(); ++current) {
                if (HostsModel::label(m_model->entries()[std::size_t(current)]) == label) {
                    m_model->setResult(current, result);
                    emit probeFinished(current);
                    break;
                }
            }
        });
}

void HostsPage::saveHosts() const
{
    QStringList hosts;
    for (const HostsModel::Entry& entry : m_model->entries()) {
        if (entry.target)
            hosts << serialise(*entry.target);
    }
    AppSettings().setValue(settings::sshHosts, hosts);
}

void HostsPage::restoreHosts()
{
    for (const QString& line : AppSettings().value(settings::sshHosts)) {
        const QStringList fields = line.split(QLatin1Char('|'));
        if (fields.size() != 4)
            continue; // written by another version: skipped, not guessed at
        common::Result<remote::SshTarget> parsed = remote::parseSshTarget(fields[0].toStdString());
        if (!parsed)
            continue;
        remote::SshTarget target = parsed.value();
        target.port = fields[1].toInt();
        target.identityFile = fields[2].toStdString();
        target.knownHostsFile = fields[3].toStdString();
        m_model->addHost(target);
    }
}

} // namespace tb::ui
