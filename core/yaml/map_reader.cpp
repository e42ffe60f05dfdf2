#include "yaml/map_reader.h"

#include "common/atomic_file.h"
#include "common/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tb::yaml {

namespace {

bool isQuoted(const YAML::Node& node)
{
    // yaml-cpp tags a quoted scalar "!" and a plain one "?": a quoted "5" is
    // a string, not the number 5.
    return node.Tag() == "!";
}

std::optional<long long> parseInteger(const YAML::Node& node)
{
    if (!node.IsScalar() || isQuoted(node))
        return std::nullopt;
    std::string_view text = node.Scalar();
    if (text.starts_with('+'))
        text.remove_prefix(1);
    long long value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty())
        return std::nullopt;
    return value;
}

std::optional<double> parseNumber(const YAML::Node& node)
{
    if (!node.IsScalar() || isQuoted(node))
        return std::nullopt;
    std::string_view text = node.Scalar();
    if (text.starts_with('+'))
        text.remove_prefix(1);
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty()
        || !std::isfinite(value))
        return std::nullopt;
    return value;
}

std::optional<bool> parseBoolean(const YAML::Node& node)
{
    if (!node.IsScalar() || isQuoted(node))
        return std::nullopt;
    const std::string text = common::toLower(node.Scalar());
    if (text == "true" || text == "yes" || text == "on")
        return true;
    if (text == "false" || text == "no" || text == "off")
        return false;
    return std::nullopt;
}

std::string shortNumber(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return text;
}

} // namespace

common::Result<std::string> readYamlFile(const std::string& path)
{
    return common::readFile(path, kMaxYamlFileBytes);
}

YAML::Node load(const std::string& text, ProblemList& problems)
{
    try {
        return YAML::Load(text);
    } catch (const YAML::Exception& e) {
        Problem problem{"", 0, 0, "not valid YAML: " + e.msg, {}};
        if (!e.mark.is_null()) {
            problem.line = e.mark.line + 1;
            problem.column = e.mark.column + 1;
        }
        problems.add(std::move(problem));
    }
    return YAML::Node(YAML::NodeType::Undefined);
}

Problem problemAt(const YAML::Node& node, const YAML::Node& fallback, std::string path,
    std::string message, std::string hint)
{
    Problem problem{std::move(path), 0, 0, std::move(message), std::move(hint)};
    YAML::Mark mark = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
    if (mark.is_null() && fallback.IsDefined())
        mark = fallback.Mark();
    if (!mark.is_null()) {
        problem.line = mark.line + 1;
        problem.column = mark.column + 1;
    }
    return problem;
}

std::string describe(const YAML::Node& node)
{
    if (!node.IsDefined() || node.IsNull())
        return "nothing";
    if (node.IsSequence())
        return "a list";
    if (node.IsMap())
        return "a mapping";
    std::string text = node.Scalar();
    constexpr size_t kMaxShown = 60;
    if (text.size() > kMaxShown)
        text = text.substr(0, kMaxShown) + "...";
    if (isQuoted(node) || text.empty())
        return "\"" + text + "\"";
    return text;
}

MapReader::MapReader(const YAML::Node& map, std::string path, ProblemList& problems)
    : m_map(map)
    , m_path(std::move(path))
    , m_problems(problems)
{
    if (map.IsDefined() && !map.IsNull() && !map.IsMap())
        m_problems.add(problemAt(
            map, YAML::Node(), m_path, "got " + describe(map) + ", expected a mapping of keys"));
    if (!map.IsMap())
        return;
    for (auto it = map.begin(); it != map.end(); ++it) {
        if (!it->first.IsScalar()) {
            m_problems.add(problemAt(it->first, map, m_path,
                "got " + describe(it->first) + " as a key, expected a name"));
            continue;
        }
        m_entries.push_back(Entry{it->first.Scalar(), it->first, it->second});
    }
}

const MapReader::Entry* MapReader::find(std::string_view key) const
{
    m_asked.emplace(key);
    for (const Entry& entry : m_entries) {
        if (entry.name == key)
            return &entry;
    }
    return nullptr;
}

bool MapReader::has(std::string_view key) const
{
    return find(key) != nullptr;
}

YAML::Node MapReader::value(std::string_view key) const
{
    const Entry* entry = find(key);
    return entry ? entry->value : YAML::Node();
}

YAML::Node MapReader::keyNode(std::string_view key) const
{
    const Entry* entry = find(key);
    return entry ? entry->key : m_map;
}

void MapReader::require(std::initializer_list<std::string_view> keys)
{
    for (const std::string_view key : keys) {
        if (!has(key))
            report(key, "missing (required)");
    }
}

std::string MapReader::pathOf(std::string_view key) const
{
    return m_path.empty() ? std::string(key) : m_path + "." + std::string(key);
}

void MapReader::report(std::string_view key, std::string message, std::string hint)
{
    const Entry* entry = find(key);
    // An empty value ("key:") has the position of whatever follows it, so
    // point at the key instead.
    if (entry)
        m_problems.add(problemAt(entry->value.IsNull() ? entry->key : entry->value, entry->key,
            pathOf(key), std::move(message), std::move(hint)));
    else
        m_problems.add(
            problemAt(m_map, YAML::Node(), pathOf(key), std::move(message), std::move(hint)));
}

std::optional<long long> MapReader::integerIn(std::string_view key, long long min, long long max)
{
    const Entry* entry = find(key);
    if (!entry)
        return std::nullopt;
    const std::optional<long long> value = parseInteger(entry->value);
    if (!value || *value < min || *value > max) {
        std::string expected = "an integer";
        if (min == 1 && max == std::numeric_limits<long long>::max())
            expected = "a positive integer";
        else if (min == 0 && max == std::numeric_limits<long long>::max())
            expected = "an integer >= 0";
        else
            expected = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
        report(key, "got " + describe(entry->value) + ", expected " + expected);
        return std::nullopt;
    }
    return value;
}

bool MapReader::unsignedInteger(std::string_view key, std::uint64_t& out)
{
    const Entry* entry = find(key);
    if (!entry)
        return false;
    std::uint64_t value = 0;
    const std::string& text = entry->value.Scalar();
    const bool plain = entry->value.IsScalar() && !isQuoted(entry->value) && !text.empty();
    const auto [end, error] = plain
        ? std::from_chars(text.data(), text.data() + text.size(), value)
        : std::from_chars_result{text.data(), std::errc::invalid_argument};
    if (!plain || error != std::errc() || end != text.data() + text.size()) {
        report(key, "got " + describe(entry->value) + ", expected an integer >= 0");
        return false;
    }
    out = value;
    return true;
}

bool MapReader::number(std::string_view key, double& out, double min, bool minInclusive, double max,
    bool maxInclusive, std::string_view expected)
{
    const Entry* entry = find(key);
    if (!entry)
        return false;
    const std::optional<double> value = parseNumber(entry->value);
    const bool inRange = value && (minInclusive ? *value >= min : *value > min)
        && (maxInclusive ? *value <= max : *value < max);
    if (!inRange) {
        report(key, "got " + describe(entry->value) + ", expected " + std::string(expected));
        return false;
    }
    out = *value;
    return true;
}

bool MapReader::number(std::string_view key, double& out, double min, double max)
{
    return number(key, out, min, true, max, true,
        "a number from " + shortNumber(min) + " to " + shortNumber(max));
}

bool MapReader::boolean(std::string_view key, bool& out)
{
    const Entry* entry = find(key);
    if (!entry)
        return false;
    const std::optional<bool> value = parseBoolean(entry->value);
    if (!value) {
        report(key, "got " + describe(entry->value) + ", expected true or false");
        return false;
    }
    out = *value;
    return true;
}

bool MapReader::string(
    std::string_view key, std::string& out, bool allowEmpty, std::string_view expected)
{
    const Entry* entry = find(key);
    if (!entry)
        return false;
    if (!entry->value.IsScalar() || (!allowEmpty && entry->value.Scalar().empty())) {
        report(key, "got " + describe(entry->value) + ", expected " + std::string(expected));
        return false;
    }
    out = entry->value.Scalar();
    return true;
}

bool MapReader::stringList(
    std::string_view key, std::vector<std::string>& out, bool allowEmpty, std::string_view expected)
{
    const Entry* entry = find(key);
    if (!entry)
        return false;
    const YAML::Node& node = entry->value;
    if (node.IsScalar() && !node.Scalar().empty()) {
        out = {node.Scalar()};
        return true;
    }
    if (!node.IsSequence() || (!allowEmpty && node.size() == 0)) {
        report(key, "got " + describe(node) + ", expected " + std::string(expected));
        return false;
    }
    std::vector<std::string> values;
    bool ok = true;
    for (size_t i = 0; i < node.size(); ++i) {
        const YAML::Node item = node[i];
        if (!item.IsScalar() || item.Scalar().empty()) {
            m_problems.add(problemAt(item, node, pathOf(key) + "[" + std::to_string(i) + "]",
                "got " + describe(item) + ", expected " + std::string(expected)));
            ok = false;
            continue;
        }
        values.push_back(item.Scalar());
    }
    if (ok)
        out = std::move(values);
    return ok;
}

std::optional<YAML::Node> MapReader::section(std::string_view key)
{
    const Entry* entry = find(key);
    if (!entry)
        return std::nullopt;
    if (!entry->value.IsMap()) {
        report(key, "got " + describe(entry->value) + ", expected a mapping of keys");
        return std::nullopt;
    }
    return entry->value;
}

std::optional<YAML::Node> MapReader::sequence(std::string_view key)
{
    const Entry* entry = find(key);
    if (!entry)
        return std::nullopt;
    if (!entry->value.IsSequence()) {
        report(key, "got " + describe(entry->value) + ", expected a list");
        return std::nullopt;
    }
    return entry->value;
}

void MapReader::reportChoice(std::string_view key, const std::vector<std::string>& names)
{
    const YAML::Node node = value(key);
    const std::string hint =
        node.IsScalar() ? common::didYouMean(names, node.Scalar()) : std::string();
    report(key, "got " + describe(node) + ", expected " + common::listNames(names), hint);
}

void MapReader::checkKeys()
{
    checkKeys(std::vector<std::string>(m_asked.begin(), m_asked.end()));
}

void MapReader::checkKeys(const std::vector<std::string>& known)
{
    for (size_t i = 0; i < m_entries.size(); ++i) {
        const Entry& entry = m_entries[i];
        const Entry* first = find(entry.name);
        if (first != &entry) {
            const YAML::Mark mark = first->key.Mark();
            m_problems.add(problemAt(entry.key, m_map, pathOf(entry.name),
                "duplicate key (first given on line " + std::to_string(mark.line + 1) + ")"));
            continue;
        }
        bool isKnown = false;
        for (const std::string& name : known)
            isKnown = isKnown || name == entry.name;
        if (!isKnown) {
            const std::string where = m_path.empty() ? "at the top level" : "under " + m_path;
            std::string hint = common::didYouMean(known, entry.name);
            if (hint.empty())
                hint = "known keys " + where + ": " + common::listNames(known);
            m_problems.add(problemAt(
                entry.key, m_map, pathOf(entry.name), "unknown key " + where, std::move(hint)));
        }
    }
}

} // namespace tb::yaml
