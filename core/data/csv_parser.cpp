#include "data/csv_parser.h"

#include <optional>

namespace tb::data {

namespace {

class CsvScanner {
public:
    explicit CsvScanner(std::string_view text)
        : m_text(text)
    {
        if (m_text.starts_with("\xEF\xBB\xBF"))
            m_position = 3;
    }

    bool atEnd() const { return m_position >= m_text.size(); }

    CsvRow nextRow()
    {
        CsvRow row;
        row.line = m_line;
        while (true) {
            std::string field;
            const bool endOfRecord = readField(field, row);
            row.fields.push_back(std::move(field));
            if (endOfRecord)
                return row;
        }
    }

    // Skips line breaks between records; true if one was skipped.
    bool skipEmptyLine()
    {
        if (atEnd())
            return false;
        const char c = m_text[m_position];
        if (c != '\n' && c != '\r')
            return false;
        consumeLineBreak();
        return true;
    }

private:
    void consumeLineBreak()
    {
        if (m_text[m_position] == '\r' && m_position + 1 < m_text.size()
            && m_text[m_position + 1] == '\n')
            ++m_position;
        ++m_position;
        ++m_line;
    }

    // Reads one field; true when it ended the record (line break or end).
    bool readField(std::string& field, CsvRow& row)
    {
        if (!atEnd() && m_text[m_position] == '"')
            return readQuotedField(field, row);
        while (!atEnd()) {
            if (const std::optional<bool> ended = fieldEnd())
                return *ended;
            field += m_text[m_position];
            ++m_position;
        }
        return true;
    }

    // At a separator or a line break: consumes it, and says whether it
    // ended the record. Else nullopt.
    std::optional<bool> fieldEnd()
    {
        const char c = m_text[m_position];
        if (c == ',') {
            ++m_position;
            return false;
        }
        if (c == '\n' || c == '\r') {
            consumeLineBreak();
            return true;
        }
        return std::nullopt;
    }

    bool readQuotedField(std::string& field, CsvRow& row)
    {
        const std::size_t openedOnLine = m_line;
        ++m_position; // the opening quote
        while (true) {
            if (atEnd()) {
                if (row.problem.empty())
                    row.problem = "a quoted field opened on line " + std::to_string(openedOnLine)
                        + " is never closed";
                return true;
            }
            const char c = m_text[m_position];
            if (c == '"') {
                if (m_position + 1 < m_text.size() && m_text[m_position + 1] == '"') {
                    field += '"';
                    m_position += 2;
                    continue;
                }
                ++m_position; // the closing quote
                break;
            }
            if (c == '\n'
                || (c == '\r'
                    && !(m_position + 1 < m_text.size() && m_text[m_position + 1] == '\n')))
                ++m_line;
            field += c;
            ++m_position;
        }
        // After the closing quote only a separator or the end may follow.
        bool reported = false;
        while (!atEnd()) {
            if (const std::optional<bool> ended = fieldEnd())
                return *ended;
            const char c = m_text[m_position];
            if (!reported && row.problem.empty()) {
                row.problem = "text after the closing quote of field "
                    + std::to_string(row.fields.size() + 1) + " on line " + std::to_string(m_line);
                reported = true;
            }
            field += c;
            ++m_position;
        }
        return true;
    }

    std::string_view m_text;
    std::size_t m_position = 0;
    std::size_t m_line = 1;
};

} // namespace

std::vector<CsvRow> parseCsv(std::string_view text)
{
    std::vector<CsvRow> rows;
    CsvScanner scanner(text);
    while (!scanner.atEnd()) {
        if (scanner.skipEmptyLine())
            continue;
        rows.push_back(scanner.nextRow());
    }
    return rows;
}

} // namespace tb::data
