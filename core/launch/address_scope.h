#pragma once

#include <string>
#include <vector>

namespace tb::launch {

// Whether a numeric address is one the internet routes (not loopback,
// RFC 1918 or shared CGNAT space, link-local, IPv6 unique-local or
// link-local, nor a documentation range). Used to warn that MASTER_ADDR
// puts the unauthenticated, unencrypted store and Gloo traffic on a public
// address (docs/LAUNCH.md, "What listens"). A text that is no numeric
// address is not public.
bool isPublicAddress(const std::string& numeric);

// The addresses `host` resolves to here (numeric, as getaddrinfo gives
// them); empty when it does not resolve.
std::vector<std::string> resolvedAddresses(const std::string& host);

} // namespace tb::launch
