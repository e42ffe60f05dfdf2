#include "arg_parser.h"

#include "commands.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace tb::cli {

using common::Error;

ArgParser::ArgParser(std::string command, std::string summary)
    : m_command(std::move(command))
    , m_summary(std::move(summary))
{
}

void ArgParser::addOption(
    const std::string& name, const std::string& valueName, const std::string& help)
{
    m_specs.push_back({name, valueName, help});
}

void ArgParser::addFlag(const std::string& name, const std::string& help)
{
    m_specs.push_back({name, {}, help});
}

void ArgParser::addPositional(const std::string& name, const std::string& help)
{
    m_positionalSpecs.push_back({name, {}, help});
}

const ArgParser::Spec* ArgParser::find(const std::string& name) const
{
    for (const Spec& spec : m_specs) {
        if (spec.name == name)
            return &spec;
    }
    return nullptr;
}

common::Status ArgParser::parse(const std::vector<std::string>& args)
{
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            m_help = true;
            continue;
        }
        if (arg.rfind("--", 0) != 0 || arg == "--") {
            m_positionals.push_back(arg);
            continue;
        }
        std::string name = arg.substr(2);
        std::optional<std::string> inlineValue;
        if (const size_t eq = name.find('='); eq != std::string::npos) {
            inlineValue = name.substr(eq + 1);
            name = name.substr(0, eq);
        }
        const Spec* spec = find(name);
        if (!spec)
            return Error{m_command + ": unknown option '--" + name + "'", "see --help"};
        if (spec->valueName.empty()) {
            if (inlineValue)
                return Error{m_command + ": option '--" + name + "' takes no value", {}};
            m_values[name] = "1";
            continue;
        }
        if (inlineValue) {
            m_values[name] = *inlineValue;
        } else if (i + 1 < args.size()) {
            m_values[name] = args[++i];
        } else {
            return Error{
                m_command + ": option '--" + name + "' needs a value (" + spec->valueName + ")",
                {}};
        }
    }
    return common::Ok{};
}

bool ArgParser::isSet(const std::string& name) const
{
    return m_values.count(name) > 0;
}

std::string ArgParser::value(const std::string& name, const std::string& fallback) const
{
    const auto it = m_values.find(name);
    return it == m_values.end() ? fallback : it->second;
}

common::Result<long long> ArgParser::integer(
    const std::string& name, long long fallback, long long min, long long max) const
{
    if (!isSet(name))
        return fallback;
    const std::string text = value(name);
    long long parsed = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    const std::string range =
        "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    if (ec == std::errc::result_out_of_range)
        return Error{
            m_command + ": --" + name + ": got '" + text + "', which overflows; expected " + range,
            {}};
    if (ec != std::errc{} || end != text.data() + text.size())
        return Error{m_command + ": --" + name + ": got '" + text + "', expected " + range, {}};
    if (parsed < min || parsed > max)
        return Error{m_command + ": --" + name + ": got " + text + ", expected " + range, {}};
    return parsed;
}

common::Result<double> ArgParser::number(
    const std::string& name, double fallback, double min, double max) const
{
    if (!isSet(name))
        return fallback;
    const std::string text = value(name);
    char* end = nullptr;
    const double parsed = std::strtod(text.c_str(), &end);
    std::ostringstream range;
    range << "a number from " << min << " to " << max;
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(parsed) || parsed < min
        || parsed > max)
        return Error{
            m_command + ": --" + name + ": got '" + text + "', expected " + range.str(), {}};
    return parsed;
}

std::string ArgParser::helpText() const
{
    std::ostringstream out;
    out << "usage: tunebench-cli " << m_command;
    for (const Spec& spec : m_positionalSpecs)
        out << " " << spec.name;
    if (!m_specs.empty())
        out << " [options]";
    out << "\n\n" << m_summary << "\n";
    if (!m_positionalSpecs.empty()) {
        out << "\narguments:\n";
        for (const Spec& spec : m_positionalSpecs)
            out << "  " << spec.name << "\n      " << spec.help << "\n";
    }
    out << "\noptions:\n";
    for (const Spec& spec : m_specs) {
        out << "  --" << spec.name;
        if (!spec.valueName.empty())
            out << " " << spec.valueName;
        out << "\n      " << spec.help << "\n";
    }
    out << "  --help\n      show this help and exit\n";
    if (!m_epilog.empty())
        out << "\n" << m_epilog << "\n";
    return out.str();
}

std::optional<int> ArgParser::parseOrExitStatus(const std::vector<std::string>& args)
{
    if (common::Status parsed = parse(args); !parsed) {
        std::cerr << "tunebench-cli " << parsed.error().toString() << "\n";
        return kExitUsage;
    }
    if (m_help) {
        std::cout << helpText();
        return kExitOk;
    }
    return std::nullopt;
}

} // namespace tb::cli
