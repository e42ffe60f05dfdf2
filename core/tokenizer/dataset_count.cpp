#include "tokenizer/dataset_count.h"

#include "tokenizer/unicode.h"

#include "common/json_document.h"
#include "common/json_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <string_view>

namespace tb::tokenizer {

namespace {

using common::Error;

constexpr std::array<std::string_view, 11> kTextFields = {"text", "prompt", "instruction", "input",
    "output", "response", "completion", "system", "context", "question", "answer"};
constexpr std::array<std::string_view, 3> kTurnLists = {"messages", "conversations", "instances"};
constexpr std::array<std::string_view, 2> kTurnText = {"content", "value"};

const char* kExpectedFields = "one of text, prompt, instruction, input, output, response, "
                              "completion, system, context, question, answer, or a messages/"
                              "conversations/instances list";

std::string shown(const nlohmann::json& value)
{
    return common::shownJson(value, 60);
}

bool isExtension(const std::string& path, std::string_view extension)
{
    return path.size() >= extension.size()
        && std::equal(extension.rbegin(), extension.rend(), path.rbegin(),
            [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
}

class Counter {
public:
    Counter(const Tokenizer& tokenizer, DatasetTokenCount& count)
        : m_tokenizer(tokenizer)
        , m_count(count)
        , m_specialPerRecord(tokenizer.encode("", true).size())
    {
    }

    void addRecord(std::uint64_t tokens)
    {
        ++m_count.records;
        m_count.tokens += tokens;
        m_count.tokensWithSpecial += tokens + m_specialPerRecord;
        m_count.maxRecordTokens =
            std::max<std::uint64_t>(m_count.maxRecordTokens, tokens + m_specialPerRecord);
    }

    std::uint64_t text(std::string_view text) const { return m_tokenizer.countTokens(text, false); }

    // Tokens of one JSON record; `where` names it in errors.
    common::Result<std::uint64_t> record(const nlohmann::json& value, const std::string& where)
    {
        if (!value.is_object())
            return Error{
                where + ": got " + shown(value) + ", expected a JSON object (a record)", {}};
        std::uint64_t tokens = 0;
        bool found = false;
        for (std::string_view field : kTextFields) {
            const auto it = value.find(field);
            if (it == value.end() || it->is_null())
                continue;
            if (!it->is_string())
                return Error{where + ", field '" + std::string(field) + "': got " + shown(*it)
                        + ", expected a string",
                    {}};
            const std::uint64_t n = text(it->get_ref<const std::string&>());
            m_count.tokensByField[std::string(field)] += n;
            tokens += n;
            found = true;
        }
        for (std::string_view list : kTurnLists) {
            const auto it = value.find(list);
            if (it == value.end() || it->is_null())
                continue;
            if (!it->is_array())
                return Error{where + ", field '" + std::string(list) + "': got " + shown(*it)
                        + ", expected a list of objects",
                    {}};
            found = true;
            for (std::size_t i = 0; i < it->size(); ++i) {
                const nlohmann::json& turn = (*it)[i];
                const std::string at =
                    where + ", field '" + std::string(list) + "[" + std::to_string(i) + "]'";
                if (!turn.is_object())
                    return Error{at + ": got " + shown(turn) + ", expected an object", {}};
                for (std::string_view key : list == "instances"
                        ? std::vector<std::string_view>{"input", "output"}
                        : std::vector<std::string_view>(kTurnText.begin(), kTurnText.end())) {
                    const auto field = turn.find(key);
                    if (field == turn.end() || field->is_null())
                        continue;
                    if (!field->is_string())
                        return Error{at + "." + std::string(key) + ": got " + shown(*field)
                                + ", expected a string",
                            {}};
                    const std::uint64_t n = text(field->get_ref<const std::string&>());
                    m_count.tokensByField[std::string(list) + "." + std::string(key)] += n;
                    tokens += n;
                }
            }
        }
        if (!found)
            return Error{where + ": no text field; expected " + kExpectedFields, {}};
        return tokens;
    }

private:
    const Tokenizer& m_tokenizer;
    DatasetTokenCount& m_count;
    std::uint64_t m_specialPerRecord;
};

common::Status countLines(std::istream& in, const std::string& path, bool jsonl, Counter& counter)
{
    std::string line;
    std::uint64_t lineNumber = 0;
    while (std::getline(in, line)) {
        ++lineNumber;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty())
            continue;
        const std::string where = path + ":" + std::to_string(lineNumber);
        if (!detail::isValidUtf8(line))
            return Error{where + ": not valid UTF-8 (byte "
                    + std::to_string(detail::validUtf8Prefix(line) + 1) + " of the line)",
                "convert the file to UTF-8"};
        if (!jsonl) {
            counter.addRecord(counter.text(line));
            continue;
        }
        nlohmann::json value;
        try {
            value = common::parseJson(line);
        } catch (const nlohmann::json::exception& e) {
            return Error{
                where + ": not valid JSON: " + e.what(), "JSONL holds one JSON object per line"};
        }
        const auto tokens = counter.record(value, where);
        if (!tokens)
            return tokens.error();
        counter.addRecord(tokens.value());
    }
    if (in.bad())
        return Error{path + ": read failed after line " + std::to_string(lineNumber), {}};
    return common::Ok{};
}

} // namespace

common::Result<DatasetTokenCount> countDatasetTokens(
    const Tokenizer& tokenizer, const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{path + ": cannot open the dataset file", {}};
    DatasetTokenCount count;
    Counter counter(tokenizer, count);
    if (isExtension(path, ".json")) {
        count.format = "json";
        nlohmann::json document;
        try {
            // Depth-bounded (a refusal quotes a record), with no size limit:
            // a dataset may be larger than any config file.
            const std::string text(std::istreambuf_iterator<char>(in), {});
            document = common::parseJson(text);
        } catch (const nlohmann::json::exception& e) {
            return Error{path + ": not valid JSON: " + e.what(), {}};
        }
        if (!document.is_array())
            return Error{path + ": got " + shown(document)
                    + ", expected a JSON array of records (alpaca style)",
                {}};
        for (std::size_t i = 0; i < document.size(); ++i) {
            const auto tokens = counter.record(document[i], path + ": [" + std::to_string(i) + "]");
            if (!tokens)
                return tokens.error();
            counter.addRecord(tokens.value());
        }
        return count;
    }
    const bool jsonl = isExtension(path, ".jsonl");
    count.format = jsonl ? "jsonl" : "text";
    const auto status = countLines(in, path, jsonl, counter);
    if (!status)
        return status.error();
    return count;
}

} // namespace tb::tokenizer
