#pragma once

// Machines for multi-node tests: each a network namespace (ip netns) with a
// veth link to one bridge, its own address, its own OpenSSH sshd with its own
// host key, and a mount namespace of its own where the test can hide a
// folder (a missing dataset, a missing binary) or put another file over one
// (another build). One user key logs in everywhere; known_hosts names every
// host's key. Needs root (namespaces, bridges); everything is removed on
// destruction, every process the hosts ran killed.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QThread>

#include <unistd.h>

#include <memory>
#include <vector>

namespace tb::test {

struct CommandOutput {
    int exitCode = -1;
    QString output; // stdout and stderr together
};

inline CommandOutput shell(const QString& command, int timeoutMs = 30000)
{
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(QStringLiteral("/bin/bash"), {QStringLiteral("-c"), command});
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished(2000);
        return {-1, QStringLiteral("timed out: ") + command};
    }
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
        QString::fromUtf8(process.readAll())};
}

inline QString quoted(const QString& text)
{
    QString escaped = text;
    escaped.replace(QStringLiteral("'"), QStringLiteral("'\\''"));
    return "'" + escaped + "'";
}

// What one host's mount namespace changes before its sshd starts.
struct HostView {
    QStringList hiddenFolders; // an empty tmpfs over each
    QList<QPair<QString, QString>> fileOverlays; // bind this file over that one
    QString sftpServer; // the program SFTP sessions run; empty: sshd's internal-sftp
};

// A program for HostView::sftpServer: the system's SFTP server, except that
// once `flag` exists it stops itself (SIGSTOP) before answering anything, as
// on a hung file system. Empty when it cannot be written.
inline QString writeHangingSftpServer(const QString& folder, const QString& flag)
{
    const QString program = folder + QStringLiteral("/sftp-gate");
    QFile file(program);
    if (!file.open(QIODevice::WriteOnly))
        return {};
    file.write(QStringLiteral(
        "#!/bin/sh\n[ -e %1 ] && kill -STOP $$\nexec /usr/lib/openssh/sftp-server \"$@\"\n")
                   .arg(quoted(flag))
                   .toUtf8());
    file.close();
    file.setPermissions(file.permissions() | QFileDevice::ExeOwner);
    return program;
}

class NetnsCluster {
public:
    NetnsCluster()
    {
        const int id = int(::getpid() % 100000);
        m_tag = QString::number(id);
        m_subnet = QStringLiteral("10.%1.%2").arg(200 + id % 50).arg((id / 50) % 250);
    }

    ~NetnsCluster()
    {
        for (auto& host : m_hosts) {
            if (host->sshd.state() != QProcess::NotRunning) {
                host->sshd.kill();
                host->sshd.waitForFinished(3000);
            }
        }
        for (int k = 0; k < int(m_hosts.size()); ++k)
            removeNamespace(k);
        shell(QStringLiteral("ip link delete %1 2>/dev/null").arg(bridge()));
    }

    // The name cannot go while a killed process still holds the namespace,
    // or its sshd's private mount namespace still holds the name's mount:
    // retry until both have died, so the next test can reuse the name. A
    // rank killed mid-write may take seconds to go: up to 30 s. The kernel
    // frees a namespace (and the veth in it) later still, so the veth's
    // outside end is deleted here: its name is free for the next test.
    void removeNamespace(int k) const
    {
        const QString script =
            QStringLiteral("for attempt in $(seq 300); do ip netns pids %1 | xargs -r kill -9; "
                           "ip netns delete %1 2>/dev/null && { ip link delete %2 2>/dev/null; "
                           "exit 0; }; sleep 0.1; done; exit 1")
                .arg(ns(k), vethOutside(k));
        if (shell(script, 40000).exitCode != 0)
            qWarning("could not remove network namespace %s", qPrintable(ns(k)));
    }

    // Empty on success, else what failed.
    QString start(const std::vector<HostView>& views)
    {
        if (::geteuid() != 0)
            return QStringLiteral("network namespaces need root");
        if (!m_dir.isValid())
            return QStringLiteral("no temporary folder");
        QDir().mkpath(QStringLiteral("/run/sshd"));
        if (QString failure = keygen(QStringLiteral("user_key")); !failure.isEmpty())
            return failure;
        QFile::copy(path("user_key.pub"), path("authorized_keys"));
        // Names are made from this process id: any namespace or bridge under
        // them was left by a killed run of an earlier process with the same id.
        for (int k = 0; k < int(views.size()); ++k)
            shell(QStringLiteral("ip netns delete %1 2>/dev/null; ip link delete %2 2>/dev/null")
                      .arg(ns(k), vethOutside(k)));
        shell(QStringLiteral("ip link delete %1 2>/dev/null").arg(bridge()));
        CommandOutput made = shell(QStringLiteral(
            "ip link add %1 type bridge && ip addr add %2.1/24 dev %1 && ip link set %1 up")
                                       .arg(bridge(), m_subnet));
        if (made.exitCode != 0)
            return QStringLiteral("bridge: ") + made.output;
        for (int k = 0; k < int(views.size()); ++k) {
            if (QString failure = addHost(k, views[size_t(k)]); !failure.isEmpty())
                return failure;
        }
        return writeKnownHosts(path("known_hosts"), -1);
    }

    QString address(int k) const { return QStringLiteral("%1.%2").arg(m_subnet).arg(10 + k); }
    QString ns(int k) const { return QStringLiteral("tbns%1-%2").arg(m_tag).arg(k); }
    QString path(const QString& name) const { return m_dir.filePath(name); }
    QString userKey() const { return path("user_key"); }
    QString knownHosts() const { return path("known_hosts"); }
    // Host k's state folder: its run registry (XDG_STATE_HOME of its logins).
    QString stateDir(int k) const { return path(QStringLiteral("host%1/state").arg(k)); }

    // A known_hosts without host `k` (-1: with every host).
    QString knownHostsWithout(int k)
    {
        const QString file = path(QStringLiteral("known_hosts_without_%1").arg(k));
        writeKnownHosts(file, k);
        return file;
    }
    // A known_hosts where host `k` has another key.
    QString knownHostsChanged(int k)
    {
        const QString file = path(QStringLiteral("known_hosts_changed_%1").arg(k));
        writeKnownHosts(file, -1, k);
        return file;
    }

    // Cuts host k off the network (its link down), or brings it back.
    bool setLinkUp(int k, bool up)
    {
        return shell(QStringLiteral("ip link set %1 %2").arg(vethOutside(k), up ? "up" : "down"))
                   .exitCode
            == 0;
    }
    // Traffic from host `from` to host `to` refused (an ICMP-prohibited route).
    bool blockRoute(int from, int to)
    {
        return shell(QStringLiteral("ip netns exec %1 ip route add prohibit %2/32")
                         .arg(ns(from), address(to)))
                   .exitCode
            == 0;
    }
    // Ends every SSH connection to host k (its sshd's per-connection
    // processes), as a dropped link would; its sshd goes on listening.
    bool dropConnections(int k)
    {
        return shell(QStringLiteral("pkill -KILL -P %1").arg(m_hosts[size_t(k)]->sshd.processId()))
                   .exitCode
            == 0;
    }
    // Host k's SFTP hangs from now on (its HostView::sftpServer made by
    // writeHangingSftpServer with `flag`): the sessions under way are
    // stopped with SIGSTOP, the ones to come stop themselves. False when no
    // SFTP session was under way there.
    bool hangSftp(int k, const QString& flag)
    {
        QFile(flag).open(QIODevice::WriteOnly);
        return !shell(
            QStringLiteral("for p in $(ip netns pids %1); do grep -q sftp-server /proc/$p/cmdline "
                           "2>/dev/null && kill -STOP $p && echo $p; done")
                .arg(ns(k)))
                    .output.trimmed()
                    .isEmpty();
    }
    // A command in host k's mount namespace (what its SSH logins see).
    CommandOutput runInView(int k, const QString& command)
    {
        return shell(QStringLiteral("nsenter -t %1 -m sh -c %2")
                         .arg(m_hosts[size_t(k)]->sshd.processId())
                         .arg(quoted(command)));
    }
    CommandOutput runIn(int k, const QString& command)
    {
        return shell(QStringLiteral("ip netns exec %1 sh -c %2").arg(ns(k), quoted(command)));
    }

private:
    QString bridge() const { return QStringLiteral("tbbr%1").arg(m_tag); }
    QString vethOutside(int k) const { return QStringLiteral("tbv%1o%2").arg(m_tag).arg(k); }
    QString vethInside(int k) const { return QStringLiteral("tbv%1i%2").arg(m_tag).arg(k); }

    struct Host {
        QProcess sshd;
    };

    QString keygen(const QString& name)
    {
        QFile::remove(path(name));
        CommandOutput out =
            shell(QStringLiteral("ssh-keygen -q -t ed25519 -N '' -f %1").arg(quoted(path(name))));
        return out.exitCode == 0 ? QString() : QStringLiteral("ssh-keygen: ") + out.output;
    }

    QString addHost(int k, const HostView& view)
    {
        const QString hostKey = QStringLiteral("host%1_key").arg(k);
        if (QString failure = keygen(hostKey); !failure.isEmpty())
            return failure;
        if (QString failure = keygen(QStringLiteral("other%1_key").arg(k)); !failure.isEmpty())
            return failure;
        QDir().mkpath(stateDir(k));
        CommandOutput net = shell(QStringLiteral(
            "ip netns add %1 && ip link add %2 type veth peer name %3 && ip link set %3 netns %1 "
            "&& "
            "ip link set %2 master %4 && ip link set %2 up && "
            "ip netns exec %1 ip addr add %5/24 dev %3 && ip netns exec %1 ip link set %3 up && "
            "ip netns exec %1 ip link set lo up")
                                      .arg(ns(k), vethOutside(k), vethInside(k), bridge(),
                                          address(k)));
        if (net.exitCode != 0)
            return QStringLiteral("namespace %1: %2").arg(ns(k), net.output);
        const QString config = path(QStringLiteral("sshd%1_config").arg(k));
        QFile file(config);
        if (!file.open(QIODevice::WriteOnly))
            return QStringLiteral("cannot write ") + config;
        file.write(QStringLiteral(
            "Port 22\nListenAddress %1\nHostKey %2\nPidFile %3\nAuthorizedKeysFile %4\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
            "Subsystem sftp %6\nLogLevel ERROR\nSetEnv XDG_STATE_HOME=%5\n"
            "ClientAliveInterval 2\nClientAliveCountMax 3\n")
                       .arg(address(k), path(hostKey), path(QStringLiteral("sshd%1.pid").arg(k)),
                           path("authorized_keys"), stateDir(k),
                           view.sftpServer.isEmpty() ? QStringLiteral("internal-sftp")
                                                     : view.sftpServer)
                       .toUtf8());
        file.close();
        QString mounts;
        for (const QString& folder : view.hiddenFolders)
            mounts += QStringLiteral("mount -t tmpfs none %1 && ").arg(quoted(folder));
        for (const auto& [source, target] : view.fileOverlays)
            mounts += QStringLiteral("mount --bind %1 %2 && ").arg(quoted(source), quoted(target));
        auto host = std::make_unique<Host>();
        host->sshd.setProcessChannelMode(QProcess::MergedChannels);
        host->sshd.start(QStringLiteral("ip"),
            {QStringLiteral("netns"), QStringLiteral("exec"), ns(k), QStringLiteral("unshare"),
                QStringLiteral("--mount"), QStringLiteral("--propagation"),
                QStringLiteral("private"), QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                mounts + QStringLiteral("exec /usr/sbin/sshd -D -e -f %1").arg(quoted(config))});
        m_hosts.push_back(std::move(host));
        for (int attempt = 0; attempt < 100; ++attempt) {
            if (m_hosts.back()->sshd.state() == QProcess::NotRunning)
                return QStringLiteral("sshd on %1 exited: %2")
                    .arg(ns(k), QString::fromUtf8(m_hosts.back()->sshd.readAll()));
            if (shell(QStringLiteral("exec 3<>/dev/tcp/%1/22").arg(address(k)), 2000).exitCode == 0)
                return {};
            QThread::msleep(100);
        }
        return QStringLiteral("sshd on %1 never listened").arg(ns(k));
    }

    // known_hosts naming every host's key but `skip`'s, `changed` with another key.
    QString writeKnownHosts(const QString& file, int skip, int changed = -1)
    {
        QFile out(file);
        if (!out.open(QIODevice::WriteOnly))
            return QStringLiteral("cannot write ") + file;
        for (int k = 0; k < int(m_hosts.size()); ++k) {
            if (k == skip)
                continue;
            QFile key(path(
                QString::fromLatin1(k == changed ? "other%1_key.pub" : "host%1_key.pub").arg(k)));
            if (!key.open(QIODevice::ReadOnly))
                return QStringLiteral("no host key for %1").arg(k);
            const QList<QByteArray> fields = key.readAll().trimmed().split(' ');
            out.write(address(k).toUtf8() + ' ' + fields[0] + ' ' + fields[1] + '\n');
        }
        return {};
    }

    QTemporaryDir m_dir;
    QString m_tag;
    QString m_subnet;
    std::vector<std::unique_ptr<Host>> m_hosts;
};

} // namespace tb::test
