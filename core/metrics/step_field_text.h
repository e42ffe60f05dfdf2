#pragma once

// How core/metrics' readers of a step's nested figures (the routing balance,
// the DPO figures) name a field and quote a value in a problem.
#include "common/json_document.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tb::metrics::detail {

// A value as JSON, cut to 40 bytes: a problem quotes it, never all of it.
inline std::string shown(const nlohmann::json& value)
{
    return common::shownJson(value, 40);
}

inline std::string fieldAt(int64_t step, const std::string& field)
{
    return "step " + std::to_string(step) + ": field '" + field + "'";
}

} // namespace tb::metrics::detail
