#include "yaml/yaml_problem.h"

#include <algorithm>
#include <tuple>

namespace tb::yaml {

std::string Problem::toString(const std::string& file) const
{
    std::string text = file;
    if (line > 0) {
        text += ":" + std::to_string(line);
        if (column > 0)
            text += ":" + std::to_string(column);
    }
    if (!text.empty())
        text += ": ";
    if (!yamlPath.empty())
        text += yamlPath + ": ";
    text += message;
    if (!hint.empty())
        text += " (" + hint + ")";
    return text;
}

void ProblemList::sortByPosition()
{
    std::stable_sort(m_problems.begin(), m_problems.end(), [](const Problem& a, const Problem& b) {
        return std::make_tuple(a.line == 0, a.line, a.column)
            < std::make_tuple(b.line == 0, b.line, b.column);
    });
}

common::Error ProblemList::toError(const std::string& file) const
{
    if (m_problems.size() == 1)
        return common::Error{m_problems.front().toString(file), {}};
    std::string text = file + ": " + std::to_string(m_problems.size()) + " problems";
    for (const Problem& problem : m_problems)
        text += "\n  " + problem.toString(file);
    return common::Error{std::move(text), {}};
}

} // namespace tb::yaml
