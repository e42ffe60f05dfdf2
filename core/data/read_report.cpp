#include "data/read_report.h"

namespace tb::data {

std::string SourcePosition::toString() const
{
    std::string text = file;
    if (line > 0)
        text += ":" + std::to_string(line);
    if (index)
        text += " (record " + std::to_string(*index) + ")";
    return text;
}

std::string ReadIssue::toString() const
{
    return where.toString() + ": " + message;
}

common::Status ReadReport::malformed(ReadIssue issue, config::MalformedPolicy policy)
{
    ++m_malformed;
    if (policy == config::MalformedPolicy::Fail)
        return common::Error{
            issue.toString(), "fix the record, or set data.malformed: skip to skip such records"};
    if (m_issues.size() < kKeptIssues)
        m_issues.push_back(std::move(issue));
    return common::Ok{};
}

void ReadReport::merge(const ReadReport& other)
{
    m_records += other.m_records;
    m_malformed += other.m_malformed;
    for (const ReadIssue& issue : other.m_issues) {
        if (m_issues.size() < kKeptIssues)
            m_issues.push_back(issue);
    }
}

} // namespace tb::data
