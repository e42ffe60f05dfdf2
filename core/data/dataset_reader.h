#pragma once

#include "common/error.h"
#include "data/read_report.h"
#include "data/reader_options.h"
#include "data/record.h"

#include <string>
#include <string_view>
#include <vector>

namespace tb::data {

// Records of one file in `options.format`:
// - alpaca, chat, preference: a JSON array or JSON Lines (see json_records.h);
// - csv: RFC 4180 with a header row, columns chosen by options.columns;
// - text: documents separated by options.textSeparator.
// Malformed records go to `report` (skipped, or an Error with
// MalformedPolicy::Fail); an unreadable or unparseable file is an Error.
common::Result<std::vector<Record>> readRecords(
    const std::string& path, const ReaderOptions& options, ReadReport& report);

// Same, from text in memory; `fileName` names it in messages.
common::Result<std::vector<Record>> parseRecords(std::string_view text, const std::string& fileName,
    const ReaderOptions& options, ReadReport& report);

} // namespace tb::data
