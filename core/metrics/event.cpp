#include "metrics/event.h"

#include "common/json_document.h"
#include "common/json_text.h"

#include <array>
#include <chrono>
#include <utility>

namespace tb::metrics {

namespace {

using common::Error;
using nlohmann::json;

constexpr std::array<std::pair<EventType, std::string_view>, 8> kTypeNames{{
    {EventType::RunStart, "run_start"},
    {EventType::Step, "step"},
    {EventType::Eval, "eval"},
    {EventType::Checkpoint, "checkpoint"},
    {EventType::Log, "log"},
    {EventType::Warning, "warning"},
    {EventType::Error, "error"},
    {EventType::RunEnd, "run_end"},
}};

// NumberOrNull: JSON has no NaN; a diverged loss is written as null.
enum class Kind { Integer, Number, NumberOrNull, String, Object };

struct Required {
    std::string_view field;
    Kind kind;
};

bool hasKind(const json& value, Kind kind)
{
    switch (kind) {
    case Kind::Integer:
        return value.is_number_integer();
    case Kind::Number:
        return value.is_number();
    case Kind::NumberOrNull:
        return value.is_number() || value.is_null();
    case Kind::String:
        return value.is_string();
    case Kind::Object:
        return value.is_object();
    }
    return false;
}

std::string_view kindName(Kind kind)
{
    switch (kind) {
    case Kind::Integer:
        return "an integer";
    case Kind::Number:
        return "a number";
    case Kind::NumberOrNull:
        return "a number or null";
    case Kind::String:
        return "a string";
    case Kind::Object:
        return "an object";
    }
    return "?";
}

// The fields each type must carry; everything else is optional (docs/EVENTS.md).
std::vector<Required> requiredFields(EventType type)
{
    switch (type) {
    case EventType::RunStart:
        return {{"run_id", Kind::String}, {"world_size", Kind::Integer}, {"config", Kind::Object}};
    case EventType::Step:
    case EventType::Eval:
        return {{"step", Kind::Integer}, {"loss", Kind::NumberOrNull}};
    case EventType::Checkpoint:
        return {{"step", Kind::Integer}, {"path", Kind::String}};
    case EventType::Log:
    case EventType::Warning:
    case EventType::Error:
        return {{"message", Kind::String}};
    case EventType::RunEnd:
        return {{"status", Kind::String}};
    case EventType::Unknown:
        return {};
    }
    return {};
}

} // namespace

std::string_view eventTypeName(EventType type)
{
    for (const auto& [t, name] : kTypeNames) {
        if (t == type)
            return name;
    }
    return "unknown";
}

EventType eventTypeFromName(std::string_view name)
{
    for (const auto& [t, typeName] : kTypeNames) {
        if (typeName == name)
            return t;
    }
    return EventType::Unknown;
}

json makeEvent(EventType type, int rank, double timeSeconds, json fields)
{
    json event = json::object();
    event["schema"] = kSchemaVersion;
    event["type"] = std::string(eventTypeName(type));
    event["time"] = timeSeconds;
    event["rank"] = rank;
    if (fields.is_object()) {
        for (auto& [key, value] : fields.items())
            event[key] = std::move(value);
    }
    return event;
}

common::Result<Event> parseEvent(std::string_view line)
{
    std::string problem;
    json body = common::parseJsonOrDiscard(line, &problem);
    if (body.is_discarded())
        return Error{"not valid JSON: " + problem, {}};
    if (!body.is_object())
        return Error{"expected a JSON object, got " + common::shownJson(body, 40), {}};

    const auto schema = body.find("schema");
    if (schema == body.end() || !schema->is_number_integer())
        return Error{"field 'schema': expected the integer schema version", {}};
    if (schema->get<long long>() > kSchemaVersion || schema->get<long long>() < 1)
        return Error{"field 'schema': got " + schema->dump() + ", this reader understands 1 to "
                + std::to_string(kSchemaVersion),
            "update Tunebench to read this run"};

    const auto typeField = body.find("type");
    if (typeField == body.end() || !typeField->is_string())
        return Error{"field 'type': expected a string such as \"step\"", {}};
    const auto time = body.find("time");
    if (time == body.end() || !time->is_number())
        return Error{"field 'time': expected Unix time in seconds", {}};
    const auto rank = body.find("rank");
    if (rank == body.end() || !rank->is_number_integer() || rank->get<long long>() < 0
        || rank->get<long long>() > 1'000'000)
        return Error{"field 'rank': expected a rank from 0, got "
                + (rank == body.end() ? std::string("nothing") : common::shownJson(*rank, 40)),
            {}};

    Event event;
    event.typeName = typeField->get<std::string>();
    event.type = eventTypeFromName(event.typeName);
    event.rank = rank->get<int>();
    event.timeSeconds = time->get<double>();
    for (const Required& required : requiredFields(event.type)) {
        const auto it = body.find(std::string(required.field));
        if (it == body.end())
            return Error{event.typeName + " event: field '" + std::string(required.field)
                    + "' is missing, expected " + std::string(kindName(required.kind)),
                {}};
        if (!hasKind(*it, required.kind))
            return Error{event.typeName + " event: field '" + std::string(required.field)
                    + "': got " + common::shownJson(*it, 40) + ", expected "
                    + std::string(kindName(required.kind)),
                {}};
    }
    event.body = std::move(body);
    return event;
}

double nowSeconds()
{
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string textField(const nlohmann::json& body, const char* key)
{
    const auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
}

} // namespace tb::metrics
