#pragma once

#include "config/config_problem.h"
#include "config/run_config.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb::config::detail {

// The problem located at `node` (or at `fallback` when `node` has no position).
ConfigProblem problemAt(const YAML::Node& node, const YAML::Node& fallback, std::string path,
    std::string message, std::string hint = {});

// "-0.1", "\"abc\"", "a list", "a mapping", "nothing": how a value is quoted
// back in "got ..., expected ..." messages.
std::string describe(const YAML::Node& node);

// Reads the keys of one YAML mapping into typed fields. Each reader leaves
// `out` untouched and records a problem when the value is wrong, so one pass
// collects every problem of the document. Keys are checked against the
// schema table by checkKeys().
class MapReader {
public:
    MapReader(const YAML::Node& map, std::string path, ProblemList& problems);

    bool has(std::string_view key) const;
    YAML::Node value(std::string_view key) const;
    YAML::Node keyNode(std::string_view key) const;
    std::string pathOf(std::string_view key) const;

    bool integer(std::string_view key, long long& out, long long min, long long max);
    bool integer(std::string_view key, int& out, int min, int max);
    bool unsignedInteger(std::string_view key, std::uint64_t& out);
    // `expected` reads as "expected <expected>", e.g. "a number in [0, 1)".
    bool number(std::string_view key, double& out, double min, bool minInclusive, double max,
        bool maxInclusive, std::string_view expected);
    bool boolean(std::string_view key, bool& out);
    bool string(std::string_view key, std::string& out, bool allowEmpty, std::string_view expected);
    // A single string or a list of strings.
    bool stringList(std::string_view key, std::vector<std::string>& out, bool allowEmpty,
        std::string_view expected);
    // A spelling fromString<Enum>() reads (aliases too); messages list the
    // canonical names.
    template <typename Enum> bool choice(std::string_view key, Enum& out);

    // A nested mapping; reports a problem (and returns nullopt) when the key
    // holds something else.
    std::optional<YAML::Node> section(std::string_view key);

    // Unknown keys (with the nearest known names) and duplicate keys.
    void checkKeys();

    void report(std::string_view key, std::string message, std::string hint = {});

    // Every key of this mapping by YAML path, value node, for later checks.
    template <typename Map> void recordNodes(Map& nodes) const
    {
        for (const Entry& entry : m_entries)
            nodes.emplace(pathOf(entry.name), entry.value);
    }

private:
    struct Entry {
        std::string name;
        YAML::Node key;
        YAML::Node value;
    };
    const Entry* find(std::string_view key) const;
    const Entry* scalarEntry(std::string_view key, std::string_view expected);
    void reportChoice(std::string_view key, const std::vector<std::string>& names);

    YAML::Node m_map;
    std::string m_path;
    ProblemList& m_problems;
    std::vector<Entry> m_entries;
};

template <typename Enum> bool MapReader::choice(std::string_view key, Enum& out)
{
    const Entry* entry = find(key);
    if (!entry)
        return false;
    if (entry->value.IsScalar()) {
        if (const auto parsed = fromString<Enum>(entry->value.Scalar())) {
            out = *parsed;
            return true;
        }
    }
    reportChoice(key, allNames<Enum>());
    return false;
}

} // namespace tb::config::detail
