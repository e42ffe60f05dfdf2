#include "plan/explain.h"

#include <charconv>
#include <cmath>

namespace tb::plan::detail {

namespace {

char* writeDigits(char* end, unsigned long long value)
{
    do {
        *--end = char('0' + value % 10);
        value /= 10;
    } while (value != 0);
    return end;
}

} // namespace

void appendFixed(std::string& out, double value, int decimals)
{
    if (!std::isfinite(value)) {
        out.append(std::isnan(value) ? "n/a" : "inf");
        return;
    }
    // Digits written backwards into a stack buffer, appended once: an
    // explained estimate formats a few hundred numbers and must stay fast.
    static constexpr double kPowers[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    decimals = decimals < 0 ? 0 : (decimals > 6 ? 6 : decimals);
    const double scaled = std::fabs(value) * kPowers[decimals] + 0.5;
    if (scaled >= 9.0e18) {
        char buffer[400];
        const auto result = std::to_chars(
            buffer, buffer + sizeof buffer, value, std::chars_format::fixed, decimals);
        out.append(buffer, result.ec == std::errc() ? result.ptr : buffer);
        return;
    }
    unsigned long long units = static_cast<unsigned long long>(scaled);
    const bool negative = value < 0 && units != 0;
    char buffer[48];
    char* const end = buffer + sizeof buffer;
    char* p = end;
    for (int d = 0; d < decimals; ++d) {
        *--p = char('0' + units % 10);
        units /= 10;
    }
    if (decimals > 0)
        *--p = '.';
    p = writeDigits(p, units);
    if (negative)
        *--p = '-';
    out.append(p, size_t(end - p));
}

void appendInt(std::string& out, long long value)
{
    char buffer[24];
    char* const end = buffer + sizeof buffer;
    const unsigned long long magnitude = value < 0 ? 0ULL - static_cast<unsigned long long>(value)
                                                   : static_cast<unsigned long long>(value);
    char* p = writeDigits(end, magnitude);
    if (value < 0)
        *--p = '-';
    out.append(p, size_t(end - p));
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

namespace {

thread_local std::string t_scratch;
thread_local bool t_scratchInUse = false;

} // namespace

Line::Line(std::string& target)
    : m_target(target)
    , m_out(t_scratchInUse ? target : t_scratch)
    , m_buffered(!t_scratchInUse)
{
    if (m_buffered) {
        t_scratchInUse = true;
        t_scratch.clear();
    }
}

Line::~Line()
{
    if (!m_buffered)
        return;
    m_target.append(t_scratch);
    t_scratchInUse = false;
}

} // namespace tb::plan::detail
