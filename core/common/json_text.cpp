#include "common/json_text.h"

namespace tb::common {

JsonTooDeep::JsonTooDeep()
    : nlohmann::json::exception(
        0, ("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels").c_str())
{
}

namespace {

template <typename Json> Json parseLimited(std::string_view text)
{
    const auto limit = [](int depth, typename Json::parse_event_t, Json&) {
        if (depth > kMaxJsonDepth)
            throw JsonTooDeep();
        return true;
    };
    return Json::parse(text.begin(), text.end(), limit);
}

} // namespace

nlohmann::json parseJson(std::string_view text)
{
    return parseLimited<nlohmann::json>(text);
}

nlohmann::ordered_json parseOrderedJson(std::string_view text)
{
    return parseLimited<nlohmann::ordered_json>(text);
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

std::optional<long long> jsonInteger(const nlohmann::json& value, long long min, long long max)
{
    long long integer = 0;
    if (value.is_number_unsigned()) {
        const auto unsignedValue = value.get<unsigned long long>();
        if (unsignedValue > static_cast<unsigned long long>(std::numeric_limits<long long>::max()))
            return std::nullopt;
        integer = static_cast<long long>(unsignedValue);
    } else if (value.is_number_integer()) {
        integer = value.get<long long>();
    } else {
        return std::nullopt;
    }
    if (integer < min || integer > max)
        return std::nullopt;
    return integer;
}

JsonFieldError::JsonFieldError(const std::string& what)
    : nlohmann::json::exception(0, what.c_str())
{
}

long long jsonIntegerAt(const nlohmann::json& object, const char* key, long long min, long long max)
{
    const nlohmann::json& value = object.at(key);
    if (const std::optional<long long> integer = jsonInteger(value, min, max))
        return *integer;
    std::string shown = value.dump();
    if (shown.size() > 40)
        shown = shown.substr(0, 40) + "...";
    throw JsonFieldError("'" + std::string(key) + "' is " + shown + ", expected an integer from "
        + std::to_string(min) + " to " + std::to_string(max));
}

} // namespace tb::common
