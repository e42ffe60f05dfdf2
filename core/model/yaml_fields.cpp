#include "model/yaml_fields.h"

#include <cmath>
#include <map>

namespace tb::model {

namespace {

std::string scalarText(const YAML::Node& node)
{
    if (node.IsScalar())
        return "'" + node.Scalar() + "'";
    if (node.IsSequence())
        return "a list";
    if (node.IsMap())
        return "a mapping";
    return "nothing";
}

} // namespace

YamlFields::YamlFields(
    const YAML::Node& map, std::string origin, std::string path, std::vector<std::string>* problems)
    : m_map(map)
    , m_origin(std::move(origin))
    , m_path(std::move(path))
    , m_problems(problems)
{
    if (!m_map.IsMap()) {
        problem(m_map, {}, "got " + scalarText(m_map) + ", expected a mapping of keys");
        m_map = YAML::Node(YAML::NodeType::Map);
    }
}

std::string YamlFields::where(const YAML::Node& node, const std::string& key) const
{
    std::string text = m_origin;
    const YAML::Mark mark = node.Mark();
    if (mark.line >= 0)
        text += ":" + std::to_string(mark.line + 1);
    std::string path = m_path;
    if (!key.empty())
        path += (path.empty() ? "" : ".") + key;
    if (!path.empty())
        text += ": " + path;
    return text;
}

void YamlFields::problem(const YAML::Node& node, const std::string& key, const std::string& what)
{
    m_problems->push_back(where(node, key) + ": " + what);
}

bool YamlFields::has(const char* key) const
{
    for (auto it = m_map.begin(); it != m_map.end(); ++it)
        if (it->first.IsScalar() && it->first.Scalar() == key)
            return true;
    return false;
}

YAML::Node YamlFields::find(const char* key, bool required)
{
    m_known.insert(key);
    for (auto it = m_map.begin(); it != m_map.end(); ++it)
        if (it->first.IsScalar() && it->first.Scalar() == key)
            return it->second;
    if (required)
        problem(m_map, key, "missing (required)");
    return YAML::Node(YAML::NodeType::Undefined);
}

std::optional<std::int64_t> YamlFields::integer(
    const char* key, bool required, std::int64_t min, std::int64_t max)
{
    const YAML::Node node = find(key, required);
    if (!node.IsDefined() || node.IsNull())
        return std::nullopt;
    std::int64_t value = 0;
    bool ok = node.IsScalar();
    if (ok) {
        try {
            // yaml-cpp accepts "1e3" for doubles only; integers must be plain.
            value = node.as<std::int64_t>();
        } catch (...) {
            ok = false;
        }
    }
    if (!ok) {
        problem(node, key, "got " + scalarText(node) + ", expected an integer");
        return std::nullopt;
    }
    if (value < min || value > max) {
        problem(node, key,
            "got " + std::to_string(value) + ", expected " + std::to_string(min) + " to "
                + std::to_string(max));
        return std::nullopt;
    }
    return value;
}

std::optional<double> YamlFields::number(const char* key, bool required, double min, double max)
{
    const YAML::Node node = find(key, required);
    if (!node.IsDefined() || node.IsNull())
        return std::nullopt;
    double value = 0;
    bool ok = node.IsScalar();
    if (ok) {
        try {
            value = node.as<double>();
        } catch (...) {
            ok = false;
        }
    }
    if (!ok || !std::isfinite(value)) {
        problem(node, key, "got " + scalarText(node) + ", expected a number");
        return std::nullopt;
    }
    if (value < min || value > max) {
        problem(node, key,
            "got " + node.Scalar() + ", expected " + std::to_string(min) + " to "
                + std::to_string(max));
        return std::nullopt;
    }
    return value;
}

std::optional<std::string> YamlFields::text(const char* key, bool required)
{
    const YAML::Node node = find(key, required);
    if (!node.IsDefined() || node.IsNull())
        return std::nullopt;
    if (!node.IsScalar()) {
        problem(node, key, "got " + scalarText(node) + ", expected text");
        return std::nullopt;
    }
    return node.Scalar();
}

std::optional<bool> YamlFields::boolean(const char* key, bool required)
{
    const YAML::Node node = find(key, required);
    if (!node.IsDefined() || node.IsNull())
        return std::nullopt;
    bool value = false;
    bool ok = node.IsScalar();
    if (ok) {
        try {
            value = node.as<bool>();
        } catch (...) {
            ok = false;
        }
    }
    if (!ok) {
        problem(node, key, "got " + scalarText(node) + ", expected true or false");
        return std::nullopt;
    }
    return value;
}

std::vector<std::string> YamlFields::textList(const char* key, bool required)
{
    std::vector<std::string> values;
    const YAML::Node node = find(key, required);
    if (!node.IsDefined() || node.IsNull())
        return values;
    if (node.IsScalar()) { // a single item written without brackets
        values.push_back(node.Scalar());
        return values;
    }
    if (!node.IsSequence()) {
        problem(node, key, "got " + scalarText(node) + ", expected a list of text");
        return values;
    }
    for (const YAML::Node& item : node) {
        if (!item.IsScalar()) {
            problem(item, key, "got " + scalarText(item) + " in the list, expected text");
            continue;
        }
        values.push_back(item.Scalar());
    }
    return values;
}

YAML::Node YamlFields::child(const char* key, bool required)
{
    return find(key, required);
}

void YamlFields::finish()
{
    std::map<std::string, int> seen;
    for (auto it = m_map.begin(); it != m_map.end(); ++it) {
        if (!it->first.IsScalar()) {
            problem(it->first, {}, "a key must be plain text");
            continue;
        }
        const std::string& key = it->first.Scalar();
        if (++seen[key] == 2)
            problem(it->first, key, "given twice (duplicate key)");
        if (!m_known.count(key)) {
            std::string known;
            for (const std::string& name : m_known)
                known += (known.empty() ? "" : ", ") + name;
            problem(it->first, key, "unknown key (known: " + known + ")");
        }
    }
}

YAML::Node loadYaml(
    const std::string& text, const std::string& origin, std::vector<std::string>* problems)
{
    try {
        return YAML::Load(text);
    } catch (const YAML::Exception& e) {
        problems->push_back(origin + ":" + std::to_string(e.mark.line + 1) + ":"
            + std::to_string(e.mark.column + 1) + ": not valid YAML: " + e.msg);
    } catch (const std::exception& e) {
        problems->push_back(origin + ": not valid YAML: " + e.what());
    }
    return YAML::Node(YAML::NodeType::Undefined);
}

std::string joinProblems(const std::vector<std::string>& problems, size_t limit)
{
    std::string text;
    for (size_t i = 0; i < problems.size() && i < limit; ++i)
        text += (i ? "\n" : "") + problems[i];
    if (problems.size() > limit)
        text += "\n(" + std::to_string(problems.size() - limit) + " more)";
    return text;
}

} // namespace tb::model
