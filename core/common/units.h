#pragma once

#include <cstdint>
#include <string>

// Human units for tables and explanations. Memory uses binary units (GiB),
// as nvidia-smi and PyTorch's memory summaries do; rates and counts use SI.
namespace tb::common {

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string formatBytes(double bytes); // "15.02 GiB", "312.0 MiB", "512 B"
std::string formatCount(double count); // "8.03 B", "6.74 M", "4.1 k", "12"
std::string formatRate(double perSecond, const std::string& unit); // "3.21 k tokens/s"
std::string formatDuration(double seconds); // "2 h 05 min", "41.3 s", "3 d 4 h"
std::string formatMoney(double usd); // "$1,234.56"
std::string formatFixed(double value, int decimals);

} // namespace tb::common
