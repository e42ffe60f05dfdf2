#include "common/units.h"

#include <cmath>
#include <cstdio>

namespace tb::common {

std::string formatFixed(double value, int decimals)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

std::string formatBytes(double bytes)
{
    const double magnitude = std::fabs(bytes);
    if (magnitude >= kGiB)
        return formatFixed(bytes / kGiB, 2) + " GiB";
    if (magnitude >= kMiB)
        return formatFixed(bytes / kMiB, 1) + " MiB";
    if (magnitude >= kKiB)
        return formatFixed(bytes / kKiB, 1) + " KiB";
    return formatFixed(bytes, 0) + " B";
}

std::string formatCount(double count)
{
    const double magnitude = std::fabs(count);
    if (magnitude >= 1e12)
        return formatFixed(count / 1e12, 2) + " T";
    if (magnitude >= 1e9)
        return formatFixed(count / 1e9, 2) + " B";
    if (magnitude >= 1e6)
        return formatFixed(count / 1e6, 2) + " M";
    if (magnitude >= 1e3)
        return formatFixed(count / 1e3, 1) + " k";
    return formatFixed(count, magnitude < 10 && count != std::floor(count) ? 2 : 0);
}

std::string formatRate(double perSecond, const std::string& unit)
{
    return formatCount(perSecond) + " " + unit + "/s";
}

std::string formatDuration(double seconds)
{
    if (!std::isfinite(seconds))
        return "never";
    if (seconds < 60)
        return formatFixed(seconds, seconds < 10 ? 2 : 1) + " s";
    const auto total = static_cast<long long>(std::llround(seconds));
    const long long days = total / 86400;
    const long long hours = (total % 86400) / 3600;
    const long long minutes = (total % 3600) / 60;
    char buffer[64];
    if (days > 0)
        std::snprintf(buffer, sizeof buffer, "%lld d %lld h", days, hours);
    else if (hours > 0)
        std::snprintf(buffer, sizeof buffer, "%lld h %02lld min", hours, minutes);
    else
        std::snprintf(buffer, sizeof buffer, "%lld min %02lld s", minutes, total % 60);
    return buffer;
}

std::string formatMoney(double usd)
{
    if (!std::isfinite(usd))
        return "n/a";
    const auto cents = static_cast<long long>(std::llround(std::fabs(usd) * 100.0));
    std::string whole = std::to_string(cents / 100);
    for (int i = static_cast<int>(whole.size()) - 3; i > 0; i -= 3)
        whole.insert(static_cast<size_t>(i), ",");
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%02lld", cents % 100);
    return std::string(usd < 0 ? "-$" : "$") + whole + fraction;
}

} // namespace tb::common
