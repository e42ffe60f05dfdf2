#pragma once

#include "common/error.h"
#include "yaml/yaml_problem.h"

#include <yaml-cpp/yaml.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// The one strict reader of YAML mappings: the run config, model presets, the
// hardware catalog, plan files and accelerate configs all read through it.
// Every problem names the line and column, the YAML path, the value got and
// what was expected; problems are collected, so one pass shows them all.
namespace tb::yaml {

// Parses one document; a syntax error becomes a located problem and an
// undefined node.
YAML::Node load(const std::string& text, ProblemList& problems);

// The most a YAML file of ours may hold (a run config, a plan, a preset, an
// accelerate config: a few KiB each). yaml-cpp keeps a node per scalar,
// many times the text's size, so a dataset named by mistake is refused with
// its size instead of filling this machine's memory.
inline constexpr std::size_t kMaxYamlFileBytes = std::size_t{16} << 20;

// A YAML file's text, at most kMaxYamlFileBytes; the error names the file.
common::Result<std::string> readYamlFile(const std::string& path);

// The problem located at `node` (or at `fallback` when `node` has no position).
Problem problemAt(const YAML::Node& node, const YAML::Node& fallback, std::string path,
    std::string message, std::string hint = {});

// "-0.1", "\"abc\"", "a list", "a mapping", "nothing": how a value is quoted
// back in "got ..., expected ..." messages.
std::string describe(const YAML::Node& node);

// Reads the keys of one YAML mapping into typed fields. Each reader leaves
// `out` untouched and records a problem when the value is wrong (an absent
// key is not a problem unless require() names it); the return value says
// whether `out` was set. Quoted scalars are text, never numbers or booleans.
class MapReader {
public:
    // `path` is the mapping's YAML path ("" for the document, "gpus[0]").
    MapReader(const YAML::Node& map, std::string path, ProblemList& problems);

    bool has(std::string_view key) const;
    YAML::Node value(std::string_view key) const;
    YAML::Node keyNode(std::string_view key) const;
    std::string pathOf(std::string_view key) const;
    const std::string& path() const { return m_path; }

    // "missing (required)" for each absent key.
    void require(std::initializer_list<std::string_view> keys);

    template <std::integral T>
    bool integer(std::string_view key, T& out, long long min = std::numeric_limits<T>::min(),
        long long max = std::numeric_limits<T>::max());
    bool unsignedInteger(std::string_view key, std::uint64_t& out);
    // `expected` reads as "expected <expected>", e.g. "a number in [0, 1)".
    bool number(std::string_view key, double& out, double min, bool minInclusive, double max,
        bool maxInclusive, std::string_view expected);
    // Inclusive range, "expected a number from <min> to <max>".
    bool number(std::string_view key, double& out, double min, double max);
    bool boolean(std::string_view key, bool& out);
    bool string(std::string_view key, std::string& out, bool allowEmpty = true,
        std::string_view expected = "text");
    // A single string or a list of strings.
    bool stringList(std::string_view key, std::vector<std::string>& out, bool allowEmpty = true,
        std::string_view expected = "a list of text");
    // A name `parse` reads (canonical or alias); messages list `names`.
    template <typename Enum, typename Parse>
    bool choice(
        std::string_view key, Enum& out, Parse parse, const std::vector<std::string>& names);

    // A nested mapping or list; a problem (and nullopt) when the key holds
    // something else.
    std::optional<YAML::Node> section(std::string_view key);
    std::optional<YAML::Node> sequence(std::string_view key);

    // Unknown keys (with the nearest known names) and duplicate keys. The
    // first form takes the known keys from a schema; the second counts as
    // known every key this reader was asked about.
    void checkKeys(const std::vector<std::string>& known);
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
    std::optional<long long> integerIn(std::string_view key, long long min, long long max);
    void reportChoice(std::string_view key, const std::vector<std::string>& names);

    YAML::Node m_map;
    std::string m_path;
    ProblemList& m_problems;
    std::vector<Entry> m_entries;
    mutable std::set<std::string, std::less<>> m_asked;
};

template <std::integral T>
bool MapReader::integer(std::string_view key, T& out, long long min, long long max)
{
    // A maximum of T's own reads as "no limit" in messages.
    const bool unbounded = max >= static_cast<long long>(std::numeric_limits<T>::max());
    const std::optional<long long> value =
        integerIn(key, min, unbounded ? std::numeric_limits<long long>::max() : max);
    if (!value)
        return false;
    if (*value > static_cast<long long>(std::numeric_limits<T>::max())) {
        report(key,
            "got " + std::to_string(*value) + ", expected at most "
                + std::to_string(std::numeric_limits<T>::max()));
        return false;
    }
    out = static_cast<T>(*value);
    return true;
}

template <typename Enum, typename Parse>
bool MapReader::choice(
    std::string_view key, Enum& out, Parse parse, const std::vector<std::string>& names)
{
    const Entry* entry = find(key);
    if (!entry)
        return false;
    if (entry->value.IsScalar()) {
        if (const std::optional<Enum> parsed = parse(entry->value.Scalar())) {
            out = *parsed;
            return true;
        }
    }
    reportChoice(key, names);
    return false;
}

} // namespace tb::yaml
