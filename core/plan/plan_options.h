#pragma once

#include "plan/plan_input.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

// Every plan input as each front end sees it: one row per option, read by the
// CLI's flags (app/cli/plan_command.cpp), the plan file reader and writer
// (plan_yaml.cpp), validatePlanInput and the GUI form (ui/planner). A value
// is parsed, range-checked and printed here only, so the CLI, a plan file and
// the GUI accept, refuse and default every option the same way
// (tests/plan/test_plan_options.cpp walks the table through all of them).
namespace tb::plan {

// Where an option's value lives in a PlanInput; its type decides how the
// option parses and which widget shows it.
using OptionField =
    std::variant<int*, std::int64_t*, double*, bool*, std::optional<bool>*, std::string*,
        std::vector<std::string>*, Method*, Precision*, Optimizer*, OptimizerKernel*, Sharding*,
        Offload*, Attention*, LossMode*, Engine*, BackwardPrefetch*, Objective*, Mxfp4Experts*>;

enum class OptionKind { Integer, Real, Boolean, Choice, Text, TextList };

struct PlanOption {
    // Plan file key: "micro_batch", or "section.key" for the nested maps
    // (lora, dataset, deepspeed, fsdp, calibration).
    std::string_view key;
    // Command-line flag without "--"; empty: plan files only. A boolean's
    // flag comes with its "no-" twin.
    std::string_view flag;
    std::string_view help; // one line: CLI help and GUI tooltip
    std::string_view unit; // shown after the value ("tokens"); may be empty
    double min = 0; // Integer and Real: the inclusive range
    double max = 0;
    int decimals = 0; // Real: digits the GUI shows and steps by
    OptionField (*field)(PlanInput&) = nullptr;
};

std::span<const PlanOption> planOptions();
const PlanOption* findPlanOption(std::string_view key);

OptionKind kindOf(const PlanOption& option);
std::string_view sectionOf(const PlanOption& option); // "" for top-level keys
std::string_view nameInSection(const PlanOption& option); // "rank" of "lora.rank"

// The option's value in `input` as the CLI and the YAML writer spell it
// ("16", "0.05", "true", "bf16-mixed", "q_proj,v_proj"; "auto" for an unset
// optional boolean).
std::string valueText(const PlanOption& option, const PlanInput& input);
// Sets the option from its text; on refusal, "got X, expected Y" (without the
// option's name: each front end names it its own way: --flag, file:line: key).
std::optional<std::string> assignText(
    const PlanOption& option, PlanInput& input, std::string_view text);
// Checks the value already in `input` against the option's range or choices.
std::optional<std::string> checkValue(const PlanOption& option, const PlanInput& input);
// "an integer from 1 to 65536", "one of adamw|sgd|...": the "expected" part.
std::string expectedText(const PlanOption& option);
// The accepted spellings of a Choice option, canonical first.
std::vector<std::string> choiceNames(const PlanOption& option);

// The table as Markdown (key, flag, accepted values, default, meaning):
// `tunebench-cli plan --list-options` prints it, and docs/PLANNER.md section 1
// holds it verbatim (a test compares them).
std::string optionTableMarkdown();

} // namespace tb::plan
