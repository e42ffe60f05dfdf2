#pragma once

#include "common/error.h"
#include "plan/plan_input.h"

#include <string>
#include <string_view>
#include <vector>

namespace tb::plan {

// A plan as YAML (docs/PLANNER.md, "Plan files"): every PlanInput field under
// its snake_case key, with a `version: 1`. Missing keys keep their defaults;
// unknown keys, duplicates and bad values are errors listing every problem
// with its key path ("lora.rank: got -3, expected a positive integer").
common::Result<PlanInput> parsePlanYaml(std::string_view yaml, const std::string& origin);
common::Result<PlanInput> loadPlanYaml(const std::string& path);
std::string planToYaml(const PlanInput& input);
common::Status savePlanYaml(const std::string& path, const PlanInput& input); // atomic

// What an import took from a framework config and what it left out.
struct [[nodiscard]] ImportResult {
    PlanInput input;
    std::vector<std::string> applied; // "zero_optimization.stage = 3 -> sharding zero3"
    std::vector<std::string> ignored; // keys read but with no plan equivalent
};

// A DeepSpeed JSON config applied over `base`: zero_optimization.stage,
// offload_optimizer / offload_param devices, fp16 / bf16 enabled,
// train_micro_batch_size_per_gpu, gradient_accumulation_steps, optimizer
// type. "auto" values keep the base's. Errors name the file and the field.
common::Result<ImportResult> importDeepSpeedJson(const std::string& path, const PlanInput& base);
common::Result<ImportResult> parseDeepSpeedJson(
    std::string_view json, const std::string& origin, const PlanInput& base);

// An accelerate config YAML applied over `base`: distributed_type,
// fsdp_config (sharding strategy, offload, activation checkpointing),
// deepspeed_config (stage, offload, accumulation), mixed_precision,
// num_processes, num_machines.
common::Result<ImportResult> importAccelerateYaml(const std::string& path, const PlanInput& base);
common::Result<ImportResult> parseAccelerateYaml(
    std::string_view yaml, const std::string& origin, const PlanInput& base);

} // namespace tb::plan
