#include "launch/port_check.h"

#include "common/master_listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace tb::launch {

namespace {

using common::Error;
using Clock = std::chrono::steady_clock;

struct Socket {
    int fd = -1;
    Socket() = default;
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;
    ~Socket() { close(); }
    void close()
    {
        if (fd >= 0)
            ::close(fd);
        fd = -1;
    }
};

int millisecondsLeft(Clock::time_point deadline)
{
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() > 0 ? int(left.count()) : 0;
}

// 0 when connected before the deadline (`s` then holds the socket), else
// errno (ETIMEDOUT when out of time).
int connectOnce(const addrinfo& address, Clock::time_point deadline, Socket& s)
{
    s.close();
    s.fd = ::socket(address.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
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

// The connections accepted and not yet judged: each has until the check's
// deadline to send its line. At most kMaxPending at once (the oldest goes),
// so a flood of connections costs a bounded number of descriptors.
constexpr size_t kMaxPending = 256;
constexpr size_t kMaxLineBytes = 128;

struct Pending {
    std::unique_ptr<Socket> socket;
    std::string received;
};

class PeerTally {
public:
    PeerTally(int peers, std::string nonce)
        : m_peers(peers)
        , m_nonce(std::move(nonce))
    {
    }
    bool complete() const { return int(m_ranks.size()) == m_peers; }

    void accept(int listener)
    {
        auto socket = std::make_unique<Socket>();
        socket->fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (socket->fd < 0)
            return;
        if (m_pending.size() == kMaxPending) {
            m_pending.erase(m_pending.begin());
            ++m_strangers;
        }
        m_pending.push_back({std::move(socket), {}});
    }

    // Reads what the pending connections sent; a whole line, an end or too
    // much judges the connection.
    void read(const std::vector<pollfd>& polled)
    {
        std::erase_if(m_pending, [&](Pending& p) {
            const auto it = std::find_if(polled.begin(), polled.end(),
                [&](const pollfd& f) { return f.fd == p.socket->fd; });
            if (it == polled.end() || it->revents == 0)
                return false;
            char buffer[kMaxLineBytes];
            const ssize_t n = ::recv(p.socket->fd, buffer, sizeof buffer, 0);
            if (n > 0)
                p.received.append(buffer, size_t(n));
            const size_t newline = p.received.find('\n');
            if (newline == std::string::npos && n > 0 && p.received.size() < kMaxLineBytes)
                return false;
            judge(newline == std::string::npos ? std::string() : p.received.substr(0, newline + 1));
            return true;
        });
    }

    std::vector<pollfd> pollSet(int listener) const
    {
        std::vector<pollfd> fds{{listener, POLLIN, 0}};
        for (const Pending& p : m_pending)
            fds.push_back({p.socket->fd, POLLIN, 0});
        return fds;
    }

    std::string shortfall(int port, double timeoutSeconds) const
    {
        std::string missing;
        for (int rank = 1; rank <= m_peers; ++rank) {
            if (!m_ranks.contains(rank))
                missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
        }
        std::string text = "port " + std::to_string(port) + ": " + std::to_string(m_ranks.size())
            + " of " + std::to_string(m_peers) + " node(s) connected within "
            + std::to_string(int(timeoutSeconds)) + " s (missing node " + missing + ")";
        const size_t strangers = m_strangers + m_pending.size();
        if (strangers > 0)
            text += "; " + std::to_string(strangers)
                + " other connection(s) did not send this check's line and were not counted";
        return text;
    }

private:
    void judge(const std::string& line)
    {
        for (int rank = 1; rank <= m_peers; ++rank) {
            if (line == portCheckLine(m_nonce, rank) && m_ranks.insert(rank).second)
                return; // a rank sent again is no second node
        }
        ++m_strangers;
    }

    int m_peers;
    std::string m_nonce;
    std::set<int> m_ranks;
    size_t m_strangers = 0;
    std::vector<Pending> m_pending;
};

} // namespace

std::string portCheckLine(const std::string& nonce, int nodeRank)
{
    return "tunebench-port-check " + nonce + " " + std::to_string(nodeRank) + "\n";
}

std::string newPortCheckNonce()
{
    std::random_device seed;
    std::uniform_int_distribution<int> digit(0, 15);
    std::string nonce;
    for (int i = 0; i < 32; ++i)
        nonce += "0123456789abcdef"[digit(seed)];
    return nonce;
}

std::string whyNotANonce(const std::string& nonce)
{
    const bool hex = std::all_of(nonce.begin(), nonce.end(),
        [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
    if (!hex || nonce.size() < 8 || nonce.size() > 64)
        return "expected 8 to 64 hex digits (0-9, a-f)";
    return {};
}

common::Status acceptPeers(const std::string& address, int port, int peers,
    const std::string& nonce, double timeoutSeconds, std::string& warning)
{
    // Where the store will listen, and no wider: the check must not open
    // the port to more of the network than the run does.
    common::Result<common::MasterListener> listening =
        common::listenOnMasterAddress(address, port, "the port check", "the port check");
    if (!listening)
        return listening.error();
    Socket listener;
    listener.fd = listening->fd;
    warning = listening->warning;
    const auto deadline = Clock::now() + std::chrono::milliseconds(long(timeoutSeconds * 1000));
    PeerTally tally(peers, nonce);
    while (!tally.complete()) {
        std::vector<pollfd> fds = tally.pollSet(listener.fd);
        if (::poll(fds.data(), fds.size(), millisecondsLeft(deadline)) <= 0)
            return Error{tally.shortfall(port, timeoutSeconds), {}};
        tally.read(fds);
        if (fds.front().revents != 0)
            tally.accept(listener.fd);
    }
    return common::Ok{};
}

common::Status connectWithin(const std::string& host, int port, const std::string& nonce,
    int nodeRank, double timeoutSeconds)
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
            Socket s;
            int error = connectOnce(*a, deadline, s);
            if (error == 0) {
                const std::string line = portCheckLine(nonce, nodeRank);
                pollfd writable{s.fd, POLLOUT, 0};
                const bool sent = ::poll(&writable, 1, millisecondsLeft(deadline)) > 0
                    && ::send(s.fd, line.data(), line.size(), MSG_NOSIGNAL) == ssize_t(line.size());
                if (sent) {
                    ::freeaddrinfo(found);
                    return common::Ok{};
                }
                error = errno != 0 ? errno : EPIPE;
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
