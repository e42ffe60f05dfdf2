#include "launch/free_port.h"

#include <cerrno>
#include <cstring>
#include <memory>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tb::launch {

namespace {

struct AddrInfoDeleter {
    void operator()(addrinfo* info) const { freeaddrinfo(info); }
};

int portOf(const sockaddr_storage& address)
{
    if (address.ss_family == AF_INET)
        return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
    if (address.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
    return 0;
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
    const std::unique_ptr<addrinfo, AddrInfoDeleter> list(found);
    std::string lastError = "no usable address";
    for (const addrinfo* info = list.get(); info; info = info->ai_next) {
        const int fd = socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, info->ai_protocol);
        if (fd < 0) {
            lastError = std::strerror(errno);
            continue;
        }
        sockaddr_storage bound{};
        socklen_t length = sizeof bound;
        const bool ok = bind(fd, info->ai_addr, info->ai_addrlen) == 0
            && getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0;
        if (!ok)
            lastError = std::strerror(errno);
        close(fd);
        if (ok && portOf(bound) > 0)
            return portOf(bound);
    }
    return common::Error{"master address '" + host + "': cannot bind a port: " + lastError,
        "is the address one of this machine's?"};
}

} // namespace tb::launch
