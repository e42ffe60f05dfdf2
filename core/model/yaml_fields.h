#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tb::model {

// Strict reading of one YAML mapping: every read marks its key as known,
// finish() reports keys nobody read and keys given twice. Problems are
// collected, not thrown, each as "<file>:<line>: <path>: <what>", so a user
// sees every mistake in a preset or plan at once. Shared by the model,
// hardware and plan readers.
class YamlFields {
public:
    YamlFields(const YAML::Node& map, std::string origin, std::string path,
        std::vector<std::string>* problems);

    bool has(const char* key) const;
    std::optional<std::int64_t> integer(
        const char* key, bool required, std::int64_t min, std::int64_t max);
    std::optional<double> number(const char* key, bool required, double min, double max);
    std::optional<std::string> text(const char* key, bool required);
    std::optional<bool> boolean(const char* key, bool required);
    std::vector<std::string> textList(const char* key, bool required);
    // A child node (map or sequence); marks the key known. Undefined when absent.
    YAML::Node child(const char* key, bool required);

    // Reports unknown and duplicate keys; call once after the reads.
    void finish();

    std::string where(const YAML::Node& node, const std::string& key) const;
    void problem(const YAML::Node& node, const std::string& key, const std::string& what);

private:
    YAML::Node find(const char* key, bool required);

    YAML::Node m_map;
    std::string m_origin;
    std::string m_path;
    std::vector<std::string>* m_problems;
    std::set<std::string> m_known;
};

// Parses YAML text; a syntax error becomes "<file>:<line>:<column>: ...".
// Returns an undefined node and appends to `problems` on failure.
YAML::Node loadYaml(
    const std::string& text, const std::string& origin, std::vector<std::string>* problems);

// "a; b; c" for an Error message, at most `limit` problems then "(N more)".
std::string joinProblems(const std::vector<std::string>& problems, size_t limit = 20);

} // namespace tb::model
