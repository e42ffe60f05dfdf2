#pragma once

// A real OpenSSH sshd for tests: its own host key, a user key in its
// authorized_keys, listening on 127.0.0.1 at a free port, logging in as the
// user running the test. Stopped (and its folder removed) on destruction.
// With a start-up banner, its logins get a home of their own whose
// ~/.bashrc and ~/.profile print a banner on stdout and stderr, as a
// cluster's welcome message or a noisy shell set-up does. With a folder
// first on PATH, its commands stand in for the system's there (a slow
// sha256sum). With a login shell (root only), sshd runs in a mount namespace
// of its own whose /etc/passwd gives the user that shell, as a user whose
// shell is fish or tcsh meets it; the machine's own /etc/passwd is untouched.
#include "launch/free_port.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QThread>

#include <map>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tb::test {

class SshdServer {
public:
    ~SshdServer()
    {
        if (m_sshd.state() != QProcess::NotRunning) {
            m_sshd.terminate();
            if (!m_sshd.waitForFinished(5000))
                m_sshd.kill();
            m_sshd.waitForFinished(2000);
        }
    }

    // Empty on success, else what went wrong (with sshd's own words).
    QString start(bool startupBanner = false, const QString& pathFirst = {})
    {
        if (!m_dir.isValid())
            return QStringLiteral("no temporary folder");
        if (!QFile::exists(QStringLiteral("/usr/sbin/sshd")))
            return QStringLiteral("/usr/sbin/sshd is missing (install openssh-server)");
        for (const QString& key : {QStringLiteral("host_key"), QStringLiteral("user_key"),
                 QStringLiteral("other_key"), QStringLiteral("other_host_key")}) {
            if (QString failure = keygen(key); !failure.isEmpty())
                return failure;
        }
        if (!QFile::copy(path("user_key.pub"), path("authorized_keys")))
            return QStringLiteral("cannot write authorized_keys");
        // sshd started as root wants its privilege-separation folder.
        if (::geteuid() == 0)
            QDir().mkpath(QStringLiteral("/run/sshd"));

        const auto port = tb::launch::pickFreePort("127.0.0.1");
        if (!port.ok())
            return QString::fromStdString(port.error().message);
        m_port = port.value();
        QFile config(path("sshd_config"));
        if (!config.open(QIODevice::WriteOnly))
            return QStringLiteral("cannot write sshd_config");
        config.write(QStringLiteral(
            "Port %1\nListenAddress 127.0.0.1\nHostKey %2\nPidFile %3\nAuthorizedKeysFile %4\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
            "Subsystem sftp internal-sftp\nLogLevel ERROR\n")
                         .arg(m_port)
                         .arg(path("host_key"), path("sshd.pid"), path("authorized_keys"))
                         .toUtf8());
        // One SetEnv line: sshd keeps only the first.
        QStringList environment;
        if (startupBanner) {
            if (QString failure = writeBannerHome(); !failure.isEmpty())
                return failure;
            environment << QStringLiteral("HOME=") + home();
        }
        if (!pathFirst.isEmpty())
            environment << QStringLiteral("PATH=") + pathFirst
                    + QStringLiteral(":/usr/local/bin:/usr/bin:/bin");
        if (!environment.isEmpty())
            config.write("SetEnv " + environment.join(QLatin1Char(' ')).toUtf8() + "\n");
        config.close();
        m_sshd.setProcessChannelMode(QProcess::MergedChannels);
        if (m_loginShell.isEmpty()) {
            m_sshd.start(QStringLiteral("/usr/sbin/sshd"),
                {QStringLiteral("-D"), QStringLiteral("-e"), QStringLiteral("-f"),
                    path("sshd_config")});
        } else if (QString failure = startWithLoginShell(); !failure.isEmpty()) {
            return failure;
        }
        if (!m_sshd.waitForStarted(5000))
            return QStringLiteral("sshd did not start: ") + m_sshd.errorString();
        for (int attempt = 0; attempt < 100; ++attempt) {
            if (m_sshd.state() == QProcess::NotRunning)
                return QStringLiteral("sshd exited: ") + QString::fromUtf8(m_sshd.readAll());
            if (accepts(m_port))
                return writeKnownHosts();
            QThread::msleep(100);
        }
        return QStringLiteral("sshd never listened on port %1").arg(m_port);
    }

    int port() const { return m_port; }

    // The login shell sshd gives the user, set before start(); needs root.
    void setLoginShell(const QString& shell) { m_loginShell = shell; }

    // The processes serving this server's connections (every descendant of
    // the listening sshd: with internal-sftp, SFTP is served there too).
    std::vector<pid_t> connectionProcesses() const
    {
        std::map<pid_t, pid_t> parentOf;
        for (const QString& entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
            bool number = false;
            const pid_t pid = entry.toInt(&number);
            QFile stat(QStringLiteral("/proc/%1/stat").arg(entry));
            if (!number || !stat.open(QIODevice::ReadOnly))
                continue;
            // "pid (comm) state ppid ...": comm may hold spaces, so read after ')'.
            const QByteArray text = stat.readAll();
            const QList<QByteArray> fields = text.mid(text.lastIndexOf(')') + 2).split(' ');
            if (fields.size() > 1)
                parentOf[pid] = fields[1].toInt();
        }
        std::vector<pid_t> found;
        for (const auto& [pid, parent] : parentOf) {
            for (pid_t up = parent; up > 1; up = parentOf.count(up) ? parentOf[up] : 0) {
                if (up == pid_t(m_sshd.processId())) {
                    found.push_back(pid);
                    break;
                }
            }
        }
        return found;
    }
    // The logins' home with a start-up banner (their run registry is under it).
    QString home() const { return path("home"); }
    QString user() const { return QString::fromLocal8Bit(::getpwuid(::geteuid())->pw_name); }
    QString path(const QString& name) const { return m_dir.filePath(name); }
    QString userKey() const { return path("user_key"); }
    QString otherUserKey() const { return path("other_key"); }
    QString knownHosts() const { return path("known_hosts"); }

    // A known-hosts file that names another key for this server.
    QString knownHostsWithOtherKey()
    {
        writeKnownHostsFile(path("known_hosts_changed"), path("other_host_key.pub"));
        return path("known_hosts_changed");
    }

private:
    QString writeBannerHome()
    {
        const QByteArray banner = "echo 'Welcome to the test node {\"not\": \"json\"}'\n"
                                  "echo 'a banner on stderr' >&2\n";
        for (const char* name : {"/.bashrc", "/.profile"}) {
            QFile file(home() + name);
            if (!QDir().mkpath(home()) || !file.open(QIODevice::WriteOnly)
                || file.write(banner) != banner.size())
                return QStringLiteral("cannot write ") + file.fileName();
        }
        return {};
    }

    // /etc/passwd with this user's shell field (the seventh) replaced.
    QString writePasswdWithLoginShell()
    {
        QFile system(QStringLiteral("/etc/passwd"));
        QFile copy(path("passwd"));
        if (!system.open(QIODevice::ReadOnly) || !copy.open(QIODevice::WriteOnly))
            return QStringLiteral("cannot copy /etc/passwd");
        const QByteArray prefix = user().toUtf8() + ':';
        bool found = false;
        for (QByteArray line : system.readAll().split('\n')) {
            if (line.isEmpty())
                continue;
            QList<QByteArray> fields = line.split(':');
            if (line.startsWith(prefix) && fields.size() == 7) {
                fields[6] = m_loginShell.toUtf8();
                line = fields.join(':');
                found = true;
            }
            copy.write(line + '\n');
        }
        return found ? QString() : QStringLiteral("no line for %1 in /etc/passwd").arg(user());
    }

    QString startWithLoginShell()
    {
        if (::geteuid() != 0)
            return QStringLiteral(
                "a login shell for the test's sshd needs root (a mount namespace)");
        if (!QFile::exists(m_loginShell))
            return m_loginShell
                + QStringLiteral(" is missing (packaging/debian-packages.txt installs it)");
        if (QString failure = writePasswdWithLoginShell(); !failure.isEmpty())
            return failure;
        // unshare and sh exec in turn, so sshd keeps the pid QProcess knows.
        m_sshd.start(QStringLiteral("unshare"),
            {QStringLiteral("--mount"), QStringLiteral("--propagation"), QStringLiteral("private"),
                QStringLiteral("/bin/sh"), QStringLiteral("-c"),
                QStringLiteral(
                    "mount --bind \"$0\" /etc/passwd && exec /usr/sbin/sshd -D -e -f \"$1\""),
                path("passwd"), path("sshd_config")});
        return {};
    }

    static bool accepts(int port)
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(static_cast<uint16_t>(port));
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool connected =
            ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
        ::close(fd);
        return connected;
    }

    QString keygen(const QString& name)
    {
        QProcess keygen;
        keygen.start(QStringLiteral("ssh-keygen"),
            {QStringLiteral("-q"), QStringLiteral("-t"), QStringLiteral("ed25519"),
                QStringLiteral("-N"), QString(), QStringLiteral("-f"), path(name)});
        if (!keygen.waitForFinished(10000) || keygen.exitCode() != 0)
            return QStringLiteral("ssh-keygen failed: ")
                + QString::fromUtf8(keygen.readAllStandardError());
        return {};
    }

    void writeKnownHostsFile(const QString& file, const QString& publicKey) const
    {
        QFile key(publicKey);
        if (!key.open(QIODevice::ReadOnly))
            return;
        // "type base64 comment": the line is "[host]:port type base64".
        const QList<QByteArray> fields = key.readAll().trimmed().split(' ');
        QFile out(file);
        if (!out.open(QIODevice::WriteOnly) || fields.size() < 2)
            return;
        out.write(QStringLiteral("[127.0.0.1]:%1 ").arg(m_port).toUtf8() + fields[0] + ' '
            + fields[1] + '\n');
    }

    QString writeKnownHosts()
    {
        writeKnownHostsFile(knownHosts(), path("host_key.pub"));
        return QFile::exists(knownHosts()) ? QString() : QStringLiteral("cannot write known_hosts");
    }

    QTemporaryDir m_dir;
    QProcess m_sshd;
    QString m_loginShell;
    int m_port = 0;
};

} // namespace tb::test
