#pragma once

#include "config/run_config.h"

#include <string>

namespace tb::data {

// What the readers need from the data section of the run config.
struct ReaderOptions {
    config::DataFormat format = config::DataFormat::Alpaca;
    config::ColumnMap columns;
    std::string instruction; // not empty: the instruction of every record
    config::MalformedPolicy malformed = config::MalformedPolicy::Skip;
    std::string textSeparator = "\n\n";

    static ReaderOptions fromConfig(const config::DataConfig& data)
    {
        return ReaderOptions{
            data.format, data.columns, data.instruction, data.malformed, data.textSeparator};
    }
};

} // namespace tb::data
