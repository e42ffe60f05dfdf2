#include "launch/port_check.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace tb::launch {

namespace {

using common::Error;
using Clock = std::chrono::steady_clock;

struct Socket {
    int fd = -1;
    ~Socket()
    {
        if (fd >= 0)
            ::close(fd);
    }
};

int millisecondsLeft(Clock::time_point deadline)
{
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() > 0 ? int(left.count()) : 0;
}

// 0 when connected before the deadline, else errno (ETIMEDOUT when out of time).
int connectOnce(const addrinfo& address, Clock::time_point deadline)
{
    Socket s{::socket(address.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
    if (s.fd < 0)
        return errno;
    if (::connect(s.fd, address.ai_addr, address.ai_addrlen) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return errno;
    pollfd waiting{s.fd, POLLOUT, 0};
    if (::poll(&waiting, 1, millisecondsLeft(deadline)) <= 0)
        return ETIMEDOUT;
    int error = 0;
    socklen_t length = sizeof error;
    ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    return error;
}

} // namespace

common::Status acceptPeers(int port, int peers, double timeoutSeconds)
{
    Socket listener{::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    int family = AF_INET6;
    if (listener.fd < 0) {
        listener.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        family = AF_INET;
    }
    const int off = 0, on = 1;
    ::setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    int bound = -1;
    if (family == AF_INET6) {
        ::setsockopt(listener.fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
        sockaddr_in6 address{};
        address.sin6_family = AF_INET6;
        address.sin6_port = htons(uint16_t(port));
        address.sin6_addr = in6addr_any;
        bound = ::bind(listener.fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    } else {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(uint16_t(port));
        address.sin_addr.s_addr = htonl(INADDR_ANY);
        bound = ::bind(listener.fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
    }
    if (bound != 0 || ::listen(listener.fd, 64) != 0)
        return Error{"port " + std::to_string(port) + " cannot be listened on: " + std::strerror(errno),
            "another process holds it (a job still running?); give another --master-port"};
    const auto deadline = Clock::now() + std::chrono::milliseconds(long(timeoutSeconds * 1000));
    int accepted = 0;
    while (accepted < peers) {
        pollfd waiting{listener.fd, POLLIN, 0};
        if (::poll(&waiting, 1, millisecondsLeft(deadline)) <= 0)
            return Error{"port " + std::to_string(port) + ": " + std::to_string(accepted) + " of "
                    + std::to_string(peers) + " node(s) connected within "
                    + std::to_string(int(timeoutSeconds)) + " s",
                {}};
        Socket peer{::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC)};
        accepted += peer.fd >= 0;
    }
    return common::Ok{};
}

common::Status connectWithin(const std::string& host, int port, double timeoutSeconds)
{
    const auto deadline = Clock::now() + std::chrono::milliseconds(long(timeoutSeconds * 1000));
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (resolved != 0)
        return Error{"cannot resolve '" + host + "': " + ::gai_strerror(resolved), {}};
    std::string reason = "timed out";
    for (;;) {
        for (const addrinfo* a = found; a; a = a->ai_next) {
            const int error = connectOnce(*a, deadline);
            if (error == 0) {
                ::freeaddrinfo(found);
                return common::Ok{};
            }
            reason = std::strerror(error);
        }
        if (millisecondsLeft(deadline) == 0)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ::freeaddrinfo(found);
    return Error{"cannot connect to " + host + ":" + std::to_string(port) + " within "
            + std::to_string(int(timeoutSeconds)) + " s: " + reason,
        "is a firewall between the nodes blocking the port?"};
}

} // namespace tb::launch
