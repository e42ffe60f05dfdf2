#pragma once

// What the SSH suites read of processes on this machine: this process's
// sockets and their options, another process's command line.
#include <QFile>
#include <QString>

#include <filesystem>
#include <set>
#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace tb::test {

// This process's TCP sockets connected to `port` on the loopback.
inline std::set<int> socketsTo(int port)
{
    std::set<int> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        const int fd = std::stoi(entry.path().filename().string());
        sockaddr_in peer{};
        socklen_t length = sizeof peer;
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0
            && peer.sin_family == AF_INET && ntohs(peer.sin_port) == port)
            found.insert(fd);
    }
    return found;
}

inline int socketOption(int fd, int level, int name)
{
    int value = -1;
    socklen_t length = sizeof value;
    return ::getsockopt(fd, level, name, &value, &length) == 0 ? value : -1;
}

// The command line of process `pid`, its arguments joined by spaces; empty
// when it is gone.
inline QString commandLineOf(long long pid)
{
    QFile file(QStringLiteral("/proc/%1/cmdline").arg(pid));
    return file.open(QIODevice::ReadOnly)
        ? QString::fromUtf8(file.readAll()).replace(QChar(0), QChar(' '))
        : QString();
}

} // namespace tb::test
