#pragma once

#include "common/error.h"
#include "common/json_text.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

// The run-event stream (docs/EVENTS.md): one JSON object per line, written by
// every rank of a run and read by the GUI and the CLI, locally or over SSH.
namespace tb::metrics {

// Bump on an incompatible change; readers refuse lines from a newer schema.
// Adding an optional field or a new event type is compatible.
inline constexpr int kSchemaVersion = 1;

enum class EventType {
    RunStart,
    Step,
    Eval,
    Checkpoint,
    Log,
    Warning,
    Error,
    RunEnd,
    Unknown, // a type from a compatible newer writer: kept, not an error
};

std::string_view eventTypeName(EventType type);
EventType eventTypeFromName(std::string_view name);

struct Event {
    EventType type = EventType::Unknown;
    std::string typeName;
    int rank = 0;
    double timeSeconds = 0; // Unix time, seconds
    nlohmann::json body; // the whole object, envelope included
};

// Builds the envelope (schema, type, time, rank) around `fields`.
nlohmann::json makeEvent(EventType type, int rank, double timeSeconds, nlohmann::json fields);

// Parses and validates one line (without its newline). The error says which
// field is wrong and what was expected; the caller adds file and line number.
common::Result<Event> parseEvent(std::string_view line);

double nowSeconds();

// A field of an event body read by its type: `fallback` when it is absent,
// null (a loss that was not finite) or of another type, never an exception.
// An integer T takes only a JSON integer within T's range: a float (1e300,
// 2.5) is none, and casting one out of range is undefined behaviour.
template <typename T> T numberField(const nlohmann::json& body, const char* key, T fallback)
{
    const auto it = body.find(key);
    if (it == body.end() || !it->is_number())
        return fallback;
    if constexpr (std::is_integral_v<T>) {
        static_assert(
            std::is_signed_v<T> || sizeof(T) < sizeof(long long), "a range that fits long long");
        const std::optional<long long> value =
            common::jsonInteger(*it, std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
        return value ? T(*value) : fallback;
    } else {
        return it->get<T>();
    }
}
std::string textField(const nlohmann::json& body, const char* key);

} // namespace tb::metrics
