#include "plan/plan_file.h"

#include "common/atomic_file.h"
#include "plan/plan_options.h"
#include "yaml/map_reader.h"

#include <yaml-cpp/yaml.h>

namespace tb::plan {

using yaml::MapReader;

namespace {

constexpr int kPlanVersion = 1;
// The nested maps of a plan file, in the order they are written.
constexpr std::string_view kSections[] = {"lora", "dataset", "deepspeed", "fsdp", "calibration"};

bool isNumberOrBoolean(OptionKind kind)
{
    return kind == OptionKind::Integer || kind == OptionKind::Real || kind == OptionKind::Boolean;
}

// One key of the map, parsed as the CLI parses the same option. Quoted
// numbers and booleans are text, as everywhere in our YAML.
void readOption(MapReader& map, const PlanOption& option, PlanInput& in)
{
    const std::string_view name = nameInSection(option);
    if (!map.has(name))
        return;
    const OptionKind kind = kindOf(option);
    if (kind == OptionKind::TextList) {
        map.stringList(name, *std::get<std::vector<std::string>*>(option.field(in)));
        return;
    }
    const YAML::Node node = map.value(name);
    const bool quoted = node.IsScalar() && node.Tag() == "!";
    if (!node.IsScalar() || (quoted && isNumberOrBoolean(kind))) {
        map.report(name, "got " + yaml::describe(node) + ", expected " + expectedText(option));
        return;
    }
    if (const std::optional<std::string> refused = assignText(option, in, node.Scalar()))
        map.report(name, *refused);
}

void readMap(MapReader& map, std::string_view section, PlanInput& in)
{
    for (const PlanOption& option : planOptions())
        if (sectionOf(option) == section)
            readOption(map, option, in);
}

void writeOption(YAML::Emitter& out, const PlanOption& option, const PlanInput& in)
{
    out << YAML::Key << std::string(nameInSection(option)) << YAML::Value;
    PlanInput copy = in;
    const OptionField field = option.field(copy);
    switch (kindOf(option)) {
    case OptionKind::Integer:
        if (int* const* value = std::get_if<int*>(&field))
            out << **value;
        else
            out << *std::get<std::int64_t*>(field);
        break;
    case OptionKind::Real:
        out << *std::get<double*>(field);
        break;
    case OptionKind::Boolean:
        out << *std::get<bool*>(field);
        break;
    case OptionKind::TextList:
        out << YAML::Flow << *std::get<std::vector<std::string>*>(field);
        break;
    case OptionKind::Choice:
    case OptionKind::Text:
        out << valueText(option, in);
        break;
    }
}

void writeMap(YAML::Emitter& out, std::string_view section, const PlanInput& in)
{
    for (const PlanOption& option : planOptions())
        if (sectionOf(option) == section)
            writeOption(out, option, in);
}

} // namespace

common::Result<PlanInput> parsePlanYaml(std::string_view yaml, const std::string& origin)
{
    yaml::ProblemList problems;
    const YAML::Node root = yaml::load(std::string(yaml), problems);
    if (!problems.isEmpty())
        return problems.toError(origin);
    PlanInput in;
    MapReader f(root, {}, problems);
    f.require({"model"});
    int version = kPlanVersion;
    f.integer("version", version, kPlanVersion, kPlanVersion);
    readMap(f, {}, in);
    for (const std::string_view section : kSections)
        if (const std::optional<YAML::Node> node = f.section(section)) {
            MapReader map(*node, std::string(section), problems);
            readMap(map, section, in);
            map.checkKeys();
        }
    f.checkKeys();
    if (!problems.isEmpty())
        return problems.toError(origin);
    if (common::Status valid = validatePlanInput(in); !valid)
        return common::Error{origin + ": " + valid.error().message, valid.error().hint};
    return in;
}

common::Result<PlanInput> loadPlanYaml(const std::string& path)
{
    const common::Result<std::string> text = yaml::readYamlFile(path);
    if (!text)
        return text.error();
    return parsePlanYaml(*text, path);
}

std::string planToYaml(const PlanInput& in)
{
    YAML::Emitter out;
    out << YAML::BeginMap;
    out << YAML::Key << "version" << YAML::Value << kPlanVersion;
    writeMap(out, {}, in);
    for (const std::string_view section : kSections) {
        out << YAML::Key << std::string(section) << YAML::Value << YAML::BeginMap;
        writeMap(out, section, in);
        out << YAML::EndMap;
    }
    out << YAML::EndMap;
    return "# Tunebench plan (docs/PLANNER.md, Plan files)\n" + std::string(out.c_str()) + "\n";
}

common::Status savePlanYaml(const std::string& path, const PlanInput& input)
{
    return common::writeFileAtomic(path, planToYaml(input));
}

} // namespace tb::plan
