#include "launch/address_scope.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace tb::launch {

namespace {

struct Range4 {
    std::uint32_t base;
    int bits;
};

// Not routed on the internet: RFC 6890's special-purpose IPv4 blocks that
// a cluster's own network uses, and the documentation blocks.
constexpr std::array<Range4, 9> kNotPublic4{{
    {0x00000000, 8}, // "this network"
    {0x0A000000, 8}, // 10/8, RFC 1918
    {0x64400000, 10}, // 100.64/10, shared address space (CGNAT)
    {0x7F000000, 8}, // loopback
    {0xA9FE0000, 16}, // 169.254/16, link-local
    {0xAC100000, 12}, // 172.16/12, RFC 1918
    {0xC0A80000, 16}, // 192.168/16, RFC 1918
    {0xC0000200, 24}, // 192.0.2/24, TEST-NET-1
    {0xC6120000, 15}, // 198.18/15, benchmarking
}};

bool inRange(std::uint32_t address, const Range4& range)
{
    const std::uint32_t mask = range.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - range.bits);
    return (address & mask) == range.base;
}

bool isPublic4(const in_addr& address)
{
    const std::uint32_t host = ntohl(address.s_addr);
    for (const Range4& range : kNotPublic4) {
        if (inRange(host, range))
            return false;
    }
    return true;
}

bool isPublic6(const in6_addr& address)
{
    const unsigned char* b = address.s6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&address) || IN6_IS_ADDR_UNSPECIFIED(&address)
        || IN6_IS_ADDR_LINKLOCAL(&address))
        return false;
    if ((b[0] & 0xFE) == 0xFC) // fc00::/7, unique local
        return false;
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D
        && b[3] == 0xB8) // 2001:db8::/32, documentation
        return false;
    if (IN6_IS_ADDR_V4MAPPED(&address)) {
        in_addr v4{};
        std::memcpy(&v4.s_addr, b + 12, 4);
        return isPublic4(v4);
    }
    return true;
}

} // namespace

bool isPublicAddress(const std::string& numeric)
{
    in_addr v4{};
    if (::inet_pton(AF_INET, numeric.c_str(), &v4) == 1)
        return isPublic4(v4);
    in6_addr v6{};
    if (::inet_pton(AF_INET6, numeric.c_str(), &v6) == 1)
        return isPublic6(v6);
    return false;
}

std::vector<std::string> resolvedAddresses(const std::string& host)
{
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    std::vector<std::string> addresses;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0)
        return addresses;
    for (const addrinfo* a = found; a; a = a->ai_next) {
        char text[NI_MAXHOST] = {};
        if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST)
            == 0)
            addresses.emplace_back(text);
    }
    ::freeaddrinfo(found);
    return addresses;
}

} // namespace tb::launch
