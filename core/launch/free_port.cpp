#include "launch/free_port.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <random>
#include <sys/socket.h>
#include <unistd.h>

namespace tb::launch {

namespace {

struct AddrInfoDeleter {
    void operator()(addrinfo* info) const { freeaddrinfo(info); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

struct PortRange {
    int low = 0;
    int high = 0;
};

// Linux's default when /proc cannot be read.
constexpr PortRange kDefaultEphemeral{32768, 60999};
// Below this, ports belong to well-known services more often than not.
constexpr int kLowestCandidate = 10000;
constexpr int kAttempts = 64;

PortRange ephemeralRange()
{
    std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
    PortRange range;
    if (file >> range.low >> range.high && range.low > 0 && range.low <= range.high)
        return range;
    return kDefaultEphemeral;
}

// Ports nobody else is handed implicitly: below the ephemeral range, or
// above it when it starts too low to leave room.
PortRange candidateRange()
{
    const PortRange ephemeral = ephemeralRange();
    if (ephemeral.low - 1 - kLowestCandidate >= 1000)
        return {kLowestCandidate, ephemeral.low - 1};
    if (65535 - ephemeral.high >= 1000)
        return {ephemeral.high + 1, 65535};
    return {}; // the whole space is ephemeral: let the kernel choose
}

// 0 when bound, else errno.
int tryBind(const sockaddr* address, socklen_t length, int family)
{
    const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    const int result = bind(fd, address, length) == 0 ? 0 : errno;
    close(fd);
    return result;
}

// 0 when the port binds on the wildcard address (IPv4; the store also tries
// IPv6, which conflicts with IPv4 owners of the port on a dual-stack host).
int bindsOnWildcard(int port)
{
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(static_cast<std::uint16_t>(port));
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    return tryBind(reinterpret_cast<const sockaddr*>(&any), sizeof any, AF_INET);
}

int portOf(const sockaddr_storage& address)
{
    if (address.ss_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
    if (address.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
    return 0;
}

void setPort(sockaddr_storage& address, int port)
{
    const auto networkPort = htons(static_cast<std::uint16_t>(port));
    if (address.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in&>(address).sin_port = networkPort;
    else if (address.ss_family == AF_INET6)
        reinterpret_cast<sockaddr_in6&>(address).sin6_port = networkPort;
}

common::Error cannotBind(const std::string& host, const std::string& reason)
{
    return {"master address '" + host + "': cannot bind a port: " + reason,
        "is the address one of this machine's?"};
}

// The kernel's choice, from the ephemeral range.
common::Result<int> kernelPickedPort(const std::string& host, const addrinfo& info)
{
    const int fd = socket(info.ai_family, info.ai_socktype | SOCK_CLOEXEC, info.ai_protocol);
    if (fd < 0)
        return cannotBind(host, std::strerror(errno));
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    const bool ok = bind(fd, info.ai_addr, info.ai_addrlen) == 0
        && getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0;
    const int error = errno;
    close(fd);
    if (!ok || portOf(bound) <= 0)
        return cannotBind(host, std::strerror(error));
    return portOf(bound);
}

} // namespace

common::Result<int> pickFreePort(const std::string& host)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    if (const int rc = getaddrinfo(host.c_str(), "0", &hints, &found); rc != 0)
        return common::Error{"master address '" + host + "': " + gai_strerror(rc),
            "give an address of this machine, e.g. 127.0.0.1"};
    const AddrInfoList list(found);
    const addrinfo& first = *list;

    const PortRange candidates = candidateRange();
    if (candidates.low == 0)
        return kernelPickedPort(host, first);
    std::random_device seed;
    std::mt19937 random(seed());
    std::uniform_int_distribution<int> draw(candidates.low, candidates.high);
    sockaddr_storage address{};
    std::memcpy(&address, first.ai_addr, first.ai_addrlen);
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        const int port = draw(random);
        setPort(address, port);
        const int onHost =
            tryBind(reinterpret_cast<const sockaddr*>(&address), first.ai_addrlen, first.ai_family);
        if (onHost == EADDRINUSE)
            continue;
        if (onHost != 0)
            return cannotBind(host, std::strerror(onHost)); // not an address of ours
        if (bindsOnWildcard(port) == 0)
            return port;
    }
    return cannotBind(host,
        "no free port among " + std::to_string(kAttempts) + " tried in "
            + std::to_string(candidates.low) + "-" + std::to_string(candidates.high));
}

} // namespace tb::launch
