#include "plan/explain.h"

#include <charconv>
#include <cmath>

namespace tb::plan::detail {

void appendFixed(std::string& out, double value, int decimals)
{
    if (!std::isfinite(value)) {
        out.append(std::isnan(value) ? "n/a" : "inf");
        return;
    }
    char buffer[64];
    const auto result =
        std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, decimals);
    if (result.ec == std::errc())
        out.append(buffer, result.ptr);
    else
        out.append("?");
}

void appendInt(std::string& out, long long value)
{
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, result.ptr);
}

void appendBytes(std::string& out, double bytes)
{
    constexpr double kKiB = 1024.0;
    const double magnitude = std::fabs(bytes);
    const char* unit = " B";
    double scaled = bytes;
    if (magnitude >= kKiB * kKiB * kKiB * kKiB) {
        scaled = bytes / (kKiB * kKiB * kKiB * kKiB);
        unit = " TiB";
    } else if (magnitude >= kKiB * kKiB * kKiB) {
        scaled = bytes / (kKiB * kKiB * kKiB);
        unit = " GiB";
    } else if (magnitude >= kKiB * kKiB) {
        scaled = bytes / (kKiB * kKiB);
        unit = " MiB";
    } else if (magnitude >= kKiB) {
        scaled = bytes / kKiB;
        unit = " KiB";
    } else {
        appendFixed(out, bytes, 0);
        out.append(unit);
        return;
    }
    appendFixed(out, scaled, std::fabs(scaled) >= 100 ? 1 : 2);
    out.append(unit);
}

void appendCount(std::string& out, double count)
{
    const double magnitude = std::fabs(count);
    if (magnitude >= 1e12) {
        appendFixed(out, count / 1e12, 2);
        out.append(" T");
    } else if (magnitude >= 1e9) {
        appendFixed(out, count / 1e9, 2);
        out.append(" B");
    } else if (magnitude >= 1e6) {
        appendFixed(out, count / 1e6, 2);
        out.append(" M");
    } else if (magnitude >= 1e4) {
        appendFixed(out, count / 1e3, 1);
        out.append(" k");
    } else {
        appendFixed(out, count, std::floor(count) == count ? 0 : 2);
    }
}

void appendSeconds(std::string& out, double seconds)
{
    if (seconds >= 1.0 || seconds == 0.0) {
        appendFixed(out, seconds, seconds >= 100 ? 0 : 2);
        out.append(" s");
    } else if (seconds >= 1e-3) {
        appendFixed(out, seconds * 1e3, seconds >= 0.1 ? 0 : 1);
        out.append(" ms");
    } else {
        appendFixed(out, seconds * 1e6, 0);
        out.append(" us");
    }
}

} // namespace tb::plan::detail
