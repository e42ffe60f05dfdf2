#include "data/dataset_reader.h"

#include "common/atomic_file.h"
#include "common/text.h"
#include "data/csv_parser.h"
#include "data/json_records.h"

#include <algorithm>

namespace tb::data {

namespace {

// Index of each role's column in the header; -1 when absent.
struct CsvColumns {
    int prompt = -1;
    int input = -1;
    int response = -1;
    int system = -1;
};

int columnIndex(const std::vector<std::string>& header, const std::string& name)
{
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

common::Result<std::vector<Record>> parseCsvRecords(std::string_view text,
    const std::string& fileName, const ReaderOptions& options, ReadReport& report)
{
    std::vector<CsvRow> rows = parseCsv(text);
    if (rows.empty())
        return std::vector<Record>{};
    const CsvRow& headerRow = rows.front();
    if (!headerRow.problem.empty())
        return common::Error::at(fileName, "line 1", "header: " + headerRow.problem);
    std::vector<std::string> header = headerRow.fields;
    for (std::string& name : header)
        name = common::trim(name);
    const config::ColumnMap& map = options.columns;
    CsvColumns columns{options.instruction.empty() ? columnIndex(header, map.prompt) : -1,
        columnIndex(header, map.input), columnIndex(header, map.response),
        columnIndex(header, map.system)};
    const auto missing = [&](const std::string& name, const char* role) {
        std::string hint;
        const auto nearest = common::nearestNames(header, name, 1);
        if (!nearest.empty())
            hint = "did you mean " + nearest.front() + "? Map it with data.columns." + role;
        return common::Error::at(fileName, "line 1",
            "the header has no column '" + name + "' (data.columns." + role + ")", hint);
    };
    if (columns.response < 0)
        return missing(map.response, "response");
    if (columns.prompt < 0 && options.instruction.empty())
        return missing(map.prompt, "prompt");

    std::vector<Record> records;
    for (std::size_t i = 1; i < rows.size(); ++i) {
        const CsvRow& row = rows[i];
        const SourcePosition where{fileName, row.line, std::nullopt};
        std::string problem = row.problem;
        if (problem.empty() && row.fields.size() != header.size())
            problem = "has " + std::to_string(row.fields.size()) + " fields, the header has "
                + std::to_string(header.size());
        Record record;
        record.kind = RecordKind::Instruction;
        record.source = where;
        if (problem.empty()) {
            const auto field = [&](int index) {
                return index >= 0 ? row.fields[static_cast<std::size_t>(index)] : std::string();
            };
            record.instruction =
                options.instruction.empty() ? field(columns.prompt) : options.instruction;
            record.input = field(columns.input);
            record.response = field(columns.response);
            record.system = field(columns.system);
            if (common::trim(record.response).empty())
                problem = "'" + map.response + "' is empty: nothing to learn";
            else if (common::trim(record.instruction).empty() && common::trim(record.input).empty())
                problem = "'" + map.prompt + "' and '" + map.input + "' are both empty";
        }
        if (!problem.empty()) {
            const common::Status status = report.malformed({where, problem}, options.malformed);
            if (!status.ok())
                return status.error();
            continue;
        }
        report.countRecord();
        records.push_back(std::move(record));
    }
    return records;
}

std::vector<Record> parseTextDocuments(std::string_view text, const std::string& fileName,
    const std::string& separator, ReadReport& report)
{
    // Line breaks are normalised first so "\n\n" also splits CRLF files.
    std::string normalised;
    normalised.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
            continue;
        normalised += text[i];
    }
    std::vector<Record> records;
    std::size_t start = 0;
    std::size_t line = 1;
    while (start <= normalised.size()) {
        std::size_t end = normalised.find(separator, start);
        if (end == std::string::npos)
            end = normalised.size();
        const std::string_view piece = std::string_view(normalised).substr(start, end - start);
        const std::size_t leading = piece.find_first_not_of(" \t\n");
        if (leading != std::string_view::npos) {
            Record record;
            record.kind = RecordKind::Text;
            record.text = common::trim(piece);
            const std::size_t lineOfText = line
                + static_cast<std::size_t>(
                    std::count(piece.begin(), piece.begin() + leading, '\n'));
            record.source = SourcePosition{fileName, lineOfText, std::nullopt};
            report.countRecord();
            records.push_back(std::move(record));
        }
        line += static_cast<std::size_t>(std::count(piece.begin(), piece.end(), '\n'))
            + static_cast<std::size_t>(std::count(separator.begin(), separator.end(), '\n'));
        if (end == normalised.size())
            break;
        start = end + separator.size();
    }
    return records;
}

} // namespace

common::Result<std::vector<Record>> parseRecords(std::string_view text, const std::string& fileName,
    const ReaderOptions& options, ReadReport& report)
{
    try {
        if (text.starts_with("\xEF\xBB\xBF"))
            text.remove_prefix(3);
        switch (options.format) {
        case config::DataFormat::Csv:
            return parseCsvRecords(text, fileName, options, report);
        case config::DataFormat::Text:
            if (options.textSeparator.empty())
                return common::Error::at(fileName, "", "the text separator is empty");
            return parseTextDocuments(text, fileName, options.textSeparator, report);
        case config::DataFormat::Alpaca:
        case config::DataFormat::Chat:
        case config::DataFormat::Preference:
            return parseJsonRecords(text, fileName, options, report);
        }
    } catch (const std::exception& error) {
        // Allocation failure or a library error: reported, never thrown on.
        return common::Error::at(fileName, "", std::string("cannot be read: ") + error.what());
    }
    return common::Error::at(fileName, "", "unknown data format");
}

common::Result<std::vector<Record>> readRecords(
    const std::string& path, const ReaderOptions& options, ReadReport& report)
{
    const common::Result<std::string> text = common::readFile(path);
    if (!text.ok())
        return text.error();
    return parseRecords(text.value(), path, options, report);
}

} // namespace tb::data
