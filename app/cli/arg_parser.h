#pragma once

#include "common/error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tb::cli {

// A small option parser for the subcommands: --name VALUE, --name=VALUE,
// --flag and positionals, with generated --help. Every error names the option,
// the value given and what was expected.
class ArgParser {
public:
    ArgParser(std::string command, std::string summary);

    void addOption(const std::string& name, const std::string& valueName, const std::string& help);
    void addFlag(const std::string& name, const std::string& help);
    void addPositional(const std::string& name, const std::string& help);
    void setEpilog(const std::string& text) { m_epilog = text; }

    common::Status parse(const std::vector<std::string>& args);
    // parse(), and what every subcommand does first with its result: bad
    // arguments go to stderr with "tunebench-cli " before them and give the
    // usage status; --help prints the help and gives 0. Empty: go on.
    std::optional<int> parseOrExitStatus(const std::vector<std::string>& args);

    bool helpRequested() const { return m_help; }
    std::string helpText() const;

    bool isSet(const std::string& name) const;
    std::string value(const std::string& name, const std::string& fallback = {}) const;
    std::vector<std::string> positionals() const { return m_positionals; }

    // Integer/number options checked against a range; absent gives `fallback`.
    common::Result<long long> integer(
        const std::string& name, long long fallback, long long min, long long max) const;
    common::Result<double> number(
        const std::string& name, double fallback, double min, double max) const;

private:
    struct Spec {
        std::string name;
        std::string valueName; // empty for a flag
        std::string help;
    };
    const Spec* find(const std::string& name) const;

    std::string m_command;
    std::string m_summary;
    std::string m_epilog;
    std::vector<Spec> m_specs;
    std::vector<Spec> m_positionalSpecs;
    std::map<std::string, std::string> m_values;
    std::vector<std::string> m_positionals;
    bool m_help = false;
};

} // namespace tb::cli
