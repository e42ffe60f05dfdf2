#pragma once

#include "common/error.h"
#include "data/read_report.h"
#include "data/reader_options.h"
#include "data/record.h"

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

namespace tb::data {

// One JSON object as an instruction or chat record through the column map,
// or a preference pair (its prompt, chosen and rejected strings).
// Column names may be dotted paths into nested objects and arrays
// ("instances.0.output"), tried after the name as a plain key.
common::Result<Record> recordFromJson(const nlohmann::ordered_json& object,
    const ReaderOptions& options, const SourcePosition& where);

// A JSON array of objects (one record per element) or JSON Lines (one object
// per line; blank lines skipped), told apart by the first character. A
// malformed record is reported through `report`; a file that is not JSON at
// all (or an array that does not parse) is an Error.
common::Result<std::vector<Record>> parseJsonRecords(std::string_view text,
    const std::string& fileName, const ReaderOptions& options, ReadReport& report);

} // namespace tb::data
