#pragma once

#include "common/error.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

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
    nlohmann::json body;    // the whole object, envelope included
};

// Builds the envelope (schema, type, time, rank) around `fields`.
nlohmann::json makeEvent(EventType type, int rank, double timeSeconds, nlohmann::json fields);

// Parses and validates one line (without its newline). The error says which
// field is wrong and what was expected; the caller adds file and line number.
common::Result<Event> parseEvent(std::string_view line);

double nowSeconds();

// A field of an event body read by its type: `fallback` when it is absent,
// null (a loss that was not finite) or of another type, never an exception.
template <typename T>
T numberField(const nlohmann::json& body, const char* key, T fallback)
{
    const auto it = body.find(key);
    return it != body.end() && it->is_number() ? it->get<T>() : fallback;
}
std::string textField(const nlohmann::json& body, const char* key);

} // namespace tb::metrics
