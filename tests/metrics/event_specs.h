#pragma once

// Event lines for test_metrics: a step line, a run written from compact specs,
// and raw bytes appended as a writer killed mid-line would leave them.
#include "metrics/event.h"
#include "metrics/event_file_reader.h"
#include "metrics/step_record.h"

#include <QString>
#include <QStringList>
#include <QtGlobal>

#include <fstream>
#include <string>
#include <vector>

namespace tb::test {

using metrics::Event;
using metrics::EventFileReader;
using metrics::EventType;
using metrics::makeEvent;
using metrics::parseEvent;
using metrics::StepRecord;
using metrics::StreamItem;
using nlohmann::json;

inline std::string stepLine(int step, double loss)
{
    StepRecord record;
    record.step = step;
    record.loss = loss;
    return makeEvent(EventType::Step, 0, 1.0e9 + step, record.toFields()).dump();
}

inline void appendRaw(const std::string& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::app);
    out << bytes;
}

inline std::vector<StreamItem> pollAll(EventFileReader& reader)
{
    std::vector<StreamItem> all;
    do {
        auto result = reader.poll();
        if (!result.ok())
            qFatal("poll failed: %s", result.error().toString().c_str());
        for (StreamItem& item : result.value())
            all.push_back(std::move(item));
    } while (reader.moreAvailable());
    return all;
}

// The event lines a run of `steps` steps would write, as compact specs:
// "start", "start@4" (resumed from step 4), "s3" (step 3), "e3" (eval after
// step 3), "c3" (checkpoint), "w" (warning), "end:completed".
inline std::vector<Event> eventsFrom(const QStringList& specs)
{
    std::vector<Event> events;
    for (const QString& spec : specs) {
        json line;
        if (spec.startsWith("start")) {
            json fields = {{"run_id", "r"}, {"world_size", 2}, {"config", json::object()},
                {"model", {{"name", "stories260K"}, {"params_total", 260000}}}, {"total_steps", 8},
                {"sharding", "zero3"}};
            if (spec.contains('@'))
                fields["resumed_from_step"] = spec.section('@', 1).toInt();
            line = makeEvent(EventType::RunStart, 0, 1.0e9, fields);
        } else if (spec.startsWith("end:")) {
            line = makeEvent(
                EventType::RunEnd, 0, 1.0e9, {{"status", spec.section(':', 1).toStdString()}});
        } else if (spec.startsWith('s')) {
            line = json::parse(stepLine(spec.mid(1).toInt(), 2.0));
        } else if (spec.startsWith('e')) {
            line = makeEvent(
                EventType::Eval, 0, 1.0e9, {{"step", spec.mid(1).toInt()}, {"loss", 1.5}});
        } else if (spec.startsWith('c')) {
            line = makeEvent(EventType::Checkpoint, 0, 1.0e9,
                {{"step", spec.mid(1).toInt()}, {"path", "checkpoints/x"}});
        } else if (spec == "w") {
            line = makeEvent(EventType::Warning, 0, 1.0e9, {{"message", "careful"}});
        } else {
            line = makeEvent(EventType::Unknown, 0, 1.0e9, json::object());
            line["type"] = "from_the_future";
        }
        auto event = parseEvent(line.dump());
        if (!event)
            qFatal("bad spec %s: %s", qPrintable(spec), event.error().message.c_str());
        events.push_back(*event);
    }
    return events;
}

} // namespace tb::test
