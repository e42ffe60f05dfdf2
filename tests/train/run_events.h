#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

// Reading a run's event stream back in tests (docs/EVENTS.md). A line that
// is not JSON becomes a discarded value, which no type matches.
namespace tb::testutil {

inline std::vector<nlohmann::json> readEventFile(const std::string& path)
{
    std::vector<nlohmann::json> out;
    std::ifstream file(path);
    std::string line;
    while (std::getline(file, line)) {
        if (!line.empty())
            out.push_back(nlohmann::json::parse(line, nullptr, false));
    }
    return out;
}

inline std::vector<nlohmann::json> eventsOfType(
    const std::vector<nlohmann::json>& all, const std::string& type)
{
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& event : all) {
        if (event.is_object() && event.value("type", "") == type)
            out.push_back(event);
    }
    return out;
}

} // namespace tb::testutil
