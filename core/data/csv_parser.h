#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tb::data {

struct CsvRow {
    std::vector<std::string> fields;
    std::size_t line = 0; // 1-based line where the record starts
    std::string problem; // not empty: the record is malformed (fields are partial)
};

// RFC 4180 CSV (https://www.rfc-editor.org/rfc/rfc4180): comma-separated
// fields, records ended by CRLF (LF and lone CR accepted too), fields in
// double quotes may hold commas, line breaks and doubled quotes (""). A UTF-8
// byte order mark is skipped and empty lines are ignored. Two departures
// from the RFC's strict grammar, as most readers do: a quote inside an
// unquoted field is kept as a character; text after a closing quote makes the
// record malformed (it is reported, not guessed at), as does a quote left
// open at the end of the input.
std::vector<CsvRow> parseCsv(std::string_view text);

} // namespace tb::data
