#include "common/json_text.h"

namespace tb::common {

JsonTooDeep::JsonTooDeep()
    : std::runtime_error("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels")
{
}

nlohmann::json parseJson(std::string_view text)
{
    const auto limit = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
        if (depth > kMaxJsonDepth)
            throw JsonTooDeep();
        return true;
    };
    return nlohmann::json::parse(text.begin(), text.end(), limit);
}

nlohmann::json parseJsonOrDiscard(std::string_view text, std::string* problem)
{
    try {
        return parseJson(text);
    } catch (const std::exception& e) {
        if (problem)
            *problem = e.what();
    }
    return nlohmann::json(nlohmann::json::value_t::discarded);
}

} // namespace tb::common
