#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "data/record.h"

#include <cstddef>
#include <string>
#include <vector>

namespace tb::data {

struct ReadIssue {
    SourcePosition where;
    std::string message;

    // "train.jsonl:12: 'output' is missing"
    std::string toString() const;
};

// Malformed records met while reading (and formatting): every one is
// counted; the first kKeptIssues are kept with their position for the log.
class [[nodiscard]] ReadReport {
public:
    static constexpr std::size_t kKeptIssues = 100;

    // Records a malformed record. With MalformedPolicy::Fail the returned
    // Status is the error to stop with; with Skip it is ok.
    common::Status malformed(ReadIssue issue, config::MalformedPolicy policy);
    void countRecord() { ++m_records; }

    std::size_t records() const { return m_records; }
    std::size_t malformedCount() const { return m_malformed; }
    const std::vector<ReadIssue>& issues() const { return m_issues; }
    void merge(const ReadReport& other);

private:
    std::size_t m_records = 0;
    std::size_t m_malformed = 0;
    std::vector<ReadIssue> m_issues;
};

} // namespace tb::data
