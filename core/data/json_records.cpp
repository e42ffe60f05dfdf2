#include "data/json_records.h"

#include "data/chat_messages.h"
#include "data/json_fields.h"

#include "common/json_text.h"
#include "common/text.h"

#include <algorithm>
#include <array>

namespace tb::data {

namespace {

using detail::json;
using detail::lookup;
using detail::readMessages;
using detail::readText;
using detail::readTools;
using detail::typeName;

common::Result<Record> instructionRecord(const json& object, const ReaderOptions& options)
{
    Record record;
    record.kind = RecordKind::Instruction;
    const config::ColumnMap& columns = options.columns;
    common::Status status = common::Ok{};
    if (options.instruction.empty())
        status = readText(object, columns.prompt, true, record.instruction);
    else
        record.instruction = options.instruction;
    if (status.ok())
        status = readText(object, columns.input, false, record.input);
    if (status.ok())
        status = readText(object, columns.response, true, record.response);
    if (status.ok())
        status = readText(object, columns.system, false, record.system);
    if (!status.ok())
        return status.error();
    if (common::trim(record.response).empty())
        return common::Error{"'" + columns.response + "' is empty: nothing to learn", {}};
    if (common::trim(record.instruction).empty() && common::trim(record.input).empty())
        return common::Error{
            "'" + columns.prompt + "' and '" + columns.input + "' are both empty", {}};
    return record;
}

common::Result<Record> chatRecord(const json& object, const ReaderOptions& options)
{
    std::string name = options.columns.messages;
    // ShareGPT keeps the turns under "conversations".
    if (!lookup(object, name) && name == config::ColumnMap{}.messages
        && object.contains("conversations"))
        name = "conversations";
    const json* messages = lookup(object, name);
    if (!messages)
        return common::Error{"'" + name + "' is missing", {}};
    Record record;
    record.kind = RecordKind::Chat;
    common::Status status = readMessages(*messages, name, record.messages);
    if (status.ok())
        status = readTools(object, record.tools);
    if (!status.ok())
        return status.error();
    const bool hasAnswer =
        std::any_of(record.messages.begin(), record.messages.end(), [](const ChatMessage& m) {
            return m.role == "assistant" && m.trained
                && (m.hasToolCalls() || !common::trim(m.content).empty());
        });
    if (!hasAnswer)
        return common::Error{
            "no trained assistant message with content or tool calls: nothing to learn", {}};
    return record;
}

// TRL's conversational pair: lists of messages. Without a prompt, the
// prompt is the turns chosen and rejected share (TRL's extract_prompt).
common::Result<Record> conversationalPreference(const json& object)
{
    Record record;
    record.kind = RecordKind::Preference;
    const json* prompt = lookup(object, "prompt");
    if (prompt && !prompt->is_array())
        return common::Error{"'prompt' is " + typeName(*prompt)
                + ", but 'chosen' is a list of messages: expected both conversational or both "
                  "plain",
            {}};
    for (const auto& [name, out] : {std::pair{"chosen", &record.chosenMessages},
             std::pair{"rejected", &record.rejectedMessages},
             std::pair{"prompt", &record.promptMessages}}) {
        const json* list = lookup(object, name);
        if (!list && std::string_view(name) == "prompt")
            continue;
        if (!list)
            return common::Error{std::string("'") + name + "' is missing", {}};
        if (common::Status status = readMessages(*list, name, *out); !status.ok())
            return status.error();
    }
    if (common::Status status = readTools(object, record.tools); !status.ok())
        return status.error();
    if (!prompt) {
        auto& chosen = record.chosenMessages;
        auto& rejected = record.rejectedMessages;
        const auto shared =
            std::mismatch(chosen.begin(), chosen.end(), rejected.begin(), rejected.end());
        record.promptMessages.assign(chosen.begin(), shared.first);
        chosen.erase(chosen.begin(), shared.first);
        rejected.erase(rejected.begin(), shared.second);
        if (record.promptMessages.empty())
            return common::Error{"'chosen' and 'rejected' share no turn and there is no 'prompt': "
                                 "the pair has no prompt",
                {}};
    }
    if (record.chosenMessages.empty() || record.rejectedMessages.empty())
        return common::Error{"a completion has no turn after the prompt", {}};
    if (record.chosenMessages == record.rejectedMessages)
        return common::Error{"'chosen' equals 'rejected': the pair prefers nothing", {}};
    return record;
}

// TRL's preference pair: plain (three strings), or conversational when
// 'chosen' is a list of messages.
common::Result<Record> preferenceRecord(const json& object)
{
    if (const json* chosen = lookup(object, "chosen"); chosen && chosen->is_array())
        return conversationalPreference(object);
    Record record;
    record.kind = RecordKind::Preference;
    using Field = std::pair<const char*, std::string*>;
    const std::array<Field, 3> fields{Field{"prompt", &record.prompt},
        Field{"chosen", &record.chosen}, Field{"rejected", &record.rejected}};
    for (const auto& [name, out] : fields) {
        const json* value = lookup(object, name);
        if (value && value->is_array())
            return common::Error{std::string("'") + name
                    + "' is a list of messages, but 'chosen' is a string: expected both "
                      "conversational or both plain",
                {}};
        if (common::Status status = readText(object, name, true, *out); !status.ok())
            return status.error();
    }
    for (const Field& completion : {fields[1], fields[2]}) {
        if (common::trim(*completion.second).empty())
            return common::Error{
                std::string("'") + completion.first + "' is empty: a pair needs two completions",
                {}};
    }
    if (record.chosen == record.rejected)
        return common::Error{"'chosen' equals 'rejected': the pair prefers nothing", {}};
    return record;
}

// Byte offsets of the elements of a top-level JSON array, so an element can
// be reported by line. Only called on text that parsed, so it can trust the
// structure.
std::vector<std::size_t> arrayElementOffsets(std::string_view text)
{
    std::vector<std::size_t> offsets;
    int depth = 0;
    bool inString = false;
    bool expectElement = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (depth == 1 && expectElement && c != ']') {
            offsets.push_back(i);
            expectElement = false;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            ++depth;
            if (depth == 1)
                expectElement = true;
        } else if (c == ']' || c == '}') {
            --depth;
        } else if (c == ',' && depth == 1) {
            expectElement = true;
        }
    }
    return offsets;
}

std::size_t lineOfOffset(std::string_view text, std::size_t offset)
{
    return 1
        + static_cast<std::size_t>(
            std::count(text.begin(), text.begin() + std::min(offset, text.size()), '\n'));
}

common::Error jsonError(
    const std::string& fileName, std::string_view text, const json::parse_error& error)
{
    // nlohmann counts the byte after the error, 1-based.
    const std::size_t offset = error.byte > 0 ? error.byte - 1 : 0;
    return common::Error::at(fileName, "line " + std::to_string(lineOfOffset(text, offset)),
        std::string("not valid JSON: ") + error.what());
}

common::Result<Record> recordOfValue(
    const json& value, const ReaderOptions& options, const SourcePosition& where)
{
    if (!value.is_object())
        return common::Error{"expected a JSON object, got " + typeName(value), {}};
    return recordFromJson(value, options, where);
}

// A record read, or its problem reported as the malformed policy says: an
// error only when the policy is to fail.
common::Status keep(common::Result<Record> record, const SourcePosition& where,
    const ReaderOptions& options, ReadReport& report, std::vector<Record>& records)
{
    if (!record.ok())
        return report.malformed({where, record.error().message}, options.malformed);
    report.countRecord();
    records.push_back(std::move(record).value());
    return common::Ok{};
}

common::Result<std::vector<Record>> parseArray(std::string_view text, const std::string& fileName,
    const ReaderOptions& options, ReadReport& report)
{
    json document;
    try {
        // Depth-bounded, with no size limit: a dataset may be larger than
        // any config file.
        document = common::parseOrderedJson(text);
    } catch (const json::parse_error& error) {
        return jsonError(fileName, text, error);
    } catch (const json::exception& error) {
        // JsonTooDeep, or a number nlohmann cannot hold (out_of_range).
        return common::Error::at(fileName, "", std::string("not valid JSON: ") + error.what());
    }
    if (!document.is_array())
        return common::Error::at(fileName, "", "expected a JSON array of records");
    const std::vector<std::size_t> offsets = arrayElementOffsets(text);
    std::vector<Record> records;
    records.reserve(document.size());
    for (std::size_t i = 0; i < document.size(); ++i) {
        SourcePosition where{fileName, i < offsets.size() ? lineOfOffset(text, offsets[i]) : 0, i};
        if (common::Status kept =
                keep(recordOfValue(document[i], options, where), where, options, report, records);
            !kept.ok())
            return kept.error();
    }
    return records;
}

common::Result<std::vector<Record>> parseLines(std::string_view text, const std::string& fileName,
    const ReaderOptions& options, ReadReport& report)
{
    std::vector<Record> records;
    std::size_t lineNumber = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        const std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++lineNumber;
        if (common::trim(line).empty())
            continue;
        const SourcePosition where{fileName, lineNumber, std::nullopt};
        common::Result<Record> record = common::Error{"", {}};
        try {
            record = recordOfValue(common::parseOrderedJson(line), options, where);
        } catch (const json::exception& error) {
            record = common::Error{std::string("not valid JSON: ") + error.what(), {}};
        }
        if (common::Status kept = keep(std::move(record), where, options, report, records);
            !kept.ok())
            return kept.error();
    }
    return records;
}

} // namespace

common::Result<Record> recordFromJson(
    const nlohmann::ordered_json& object, const ReaderOptions& options, const SourcePosition& where)
{
    common::Result<Record> record = options.format == config::DataFormat::Chat
        ? chatRecord(object, options)
        : options.format == config::DataFormat::Preference ? preferenceRecord(object)
                                                           : instructionRecord(object, options);
    if (record.ok())
        record.value().source = where;
    return record;
}

common::Result<std::vector<Record>> parseJsonRecords(std::string_view text,
    const std::string& fileName, const ReaderOptions& options, ReadReport& report)
{
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return std::vector<Record>{};
    if (text[first] == '[')
        return parseArray(text, fileName, options, report);
    if (text[first] == '{')
        return parseLines(text, fileName, options, report);
    return common::Error::at(fileName, "line " + std::to_string(lineOfOffset(text, first)),
        "expected a JSON array of records or JSON Lines objects");
}

} // namespace tb::data
