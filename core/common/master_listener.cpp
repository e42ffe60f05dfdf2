#include "common/master_listener.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace tb::common {

namespace {

struct AddressListDeleter {
    void operator()(addrinfo* list) const { ::freeaddrinfo(list); }
};

// A listening socket on one resolved address; -1 with errno set on failure.
int listenOn(const addrinfo& address)
{
    const int fd =
        ::socket(address.ai_family, address.ai_socktype | SOCK_CLOEXEC, address.ai_protocol);
    if (fd < 0)
        return -1;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, address.ai_addr, address.ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0)
        return fd;
    const int error = errno;
    ::close(fd);
    errno = error;
    return -1;
}

Result<std::unique_ptr<addrinfo, AddressListDeleter>> resolve(
    const char* address, int port, int flags)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | flags;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (const int status = ::getaddrinfo(address, service.c_str(), &hints, &found); status != 0)
        return Error{std::string("MASTER_ADDR ") + (address ? address : "(any)")
                + " does not resolve: " + ::gai_strerror(status),
            {}};
    return std::unique_ptr<addrinfo, AddressListDeleter>(found);
}

} // namespace

Result<MasterListener> listenOnMasterAddress(
    const std::string& address, int port, const std::string& who, const std::string& what)
{
    auto resolved = resolve(address.c_str(), port, 0);
    if (!resolved)
        return resolved.error();
    bool foreign = false;
    int lastError = 0;
    for (const addrinfo* a = resolved->get(); a; a = a->ai_next) {
        if (const int fd = listenOn(*a); fd >= 0)
            return MasterListener{fd, {}};
        lastError = errno;
        foreign = foreign || lastError == EADDRNOTAVAIL;
    }
    const std::string where = address + ":" + std::to_string(port);
    if (!foreign)
        return Error{who + " cannot listen on " + where + ": " + std::strerror(lastError),
            "is another job using MASTER_PORT?"};
    // Not an address of this machine (a NAT's public address that reaches
    // it): only every interface will do.
    auto any = resolve(nullptr, port, AI_PASSIVE);
    if (!any)
        return any.error();
    for (const addrinfo* a = any->get(); a; a = a->ai_next) {
        if (const int fd = listenOn(*a); fd >= 0)
            return MasterListener{fd,
                "MASTER_ADDR " + address + " is no address of this machine: " + what
                    + " listens on every interface at port " + std::to_string(port)
                    + ", and has no authentication; keep the port closed to all but the "
                      "cluster's nodes (docs/LAUNCH.md, \"What listens\")"};
        lastError = errno;
    }
    return Error{
        who + " cannot listen on port " + std::to_string(port) + ": " + std::strerror(lastError),
        "is another job using MASTER_PORT?"};
}

} // namespace tb::common
