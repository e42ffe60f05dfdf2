#include "plan/plan_file.h"

#include "common/atomic_file.h"
#include "common/json_document.h"
#include "common/text.h"
#include "common/training_limits.h"

#include <algorithm>
#include <nlohmann/json.hpp>

// DeepSpeed JSON and accelerate YAML configs into a plan. Only what a plan
// models is taken; the rest is listed as ignored so the user sees it.
namespace tb::plan {

namespace {

using nlohmann::json;

struct JsonImport {
    const std::string& origin;
    ImportResult result;
    std::vector<std::string> problems;

    void problem(const std::string& field, const std::string& what)
    {
        problems.push_back(origin + ": field '" + field + "': " + what);
    }

    static bool isAuto(const json& v) { return v.is_string() && v.get<std::string>() == "auto"; }

    // A positive integer field; "auto" keeps the base value.
    std::optional<int> positive(
        const json& object, const char* key, const std::string& path, long long max)
    {
        const auto it = object.find(key);
        if (it == object.end() || it->is_null() || isAuto(*it))
            return std::nullopt;
        if (it->is_number_integer() || it->is_number_unsigned()) {
            const long long v = it->get<long long>();
            if (v >= 1 && v <= max
                && !(it->is_number_unsigned()
                    && it->get<unsigned long long>() > (unsigned long long)max))
                return int(v);
        }
        problem(path,
            "got " + it->dump() + ", expected an integer from 1 to " + std::to_string(max)
                + " or \"auto\"");
        return std::nullopt;
    }

    std::optional<bool> flag(const json& object, const char* key, const std::string& path)
    {
        const auto it = object.find(key);
        if (it == object.end() || it->is_null() || isAuto(*it))
            return std::nullopt;
        if (it->is_boolean())
            return it->get<bool>();
        problem(path, "got " + it->dump() + ", expected true, false or \"auto\"");
        return std::nullopt;
    }

    // A bucket size in elements; "auto" is 0 (filled from the hidden size).
    std::optional<double> elements(const json& object, const char* key, const std::string& path)
    {
        const auto it = object.find(key);
        if (it == object.end() || it->is_null())
            return std::nullopt;
        if (isAuto(*it))
            return 0.0;
        if (it->is_number() && it->get<double>() >= 0 && it->get<double>() <= 1e15)
            return it->get<double>();
        problem(path,
            "got " + it->dump() + ", expected a number of elements from 0 to 1e15 or \"auto\"");
        return std::nullopt;
    }

    std::optional<std::string> device(const json& object, const char* key, const std::string& path)
    {
        const auto section = object.find(key);
        if (section == object.end() || section->is_null())
            return std::nullopt;
        if (!section->is_object()) {
            problem(path, "got " + section->dump() + ", expected an object with \"device\"");
            return std::nullopt;
        }
        const auto it = section->find("device");
        if (it == section->end() || it->is_null())
            return std::string("none");
        if (!it->is_string()) {
            problem(
                path + ".device", "got " + it->dump() + ", expected \"cpu\", \"nvme\" or \"none\"");
            return std::nullopt;
        }
        const std::string value = common::toLower(it->get<std::string>());
        if (value != "cpu" && value != "nvme" && value != "none") {
            problem(
                path + ".device", "got \"" + value + "\", expected \"cpu\", \"nvme\" or \"none\"");
            return std::nullopt;
        }
        return value;
    }
};

// The zero_optimization settings that size buffers (docs/PLANNER.md 4.6).
void importZeroSettings(const json& zero, JsonImport& im)
{
    DeepSpeedSettings& ds = im.result.input.deepspeed;
    const auto apply = [&](const char* key, auto value, auto& target) {
        if (!value)
            return;
        target = *value;
        im.result.applied.push_back("zero_optimization." + std::string(key) + " = "
            + zero.at(key).dump() + " (counted in the buffers)");
    };
    const std::string at = "zero_optimization.";
    apply("reduce_bucket_size", im.elements(zero, "reduce_bucket_size", at + "reduce_bucket_size"),
        ds.reduceBucketSize);
    apply("allgather_bucket_size",
        im.elements(zero, "allgather_bucket_size", at + "allgather_bucket_size"),
        ds.allgatherBucketSize);
    apply("stage3_prefetch_bucket_size",
        im.elements(zero, "stage3_prefetch_bucket_size", at + "stage3_prefetch_bucket_size"),
        ds.prefetchBucketSize);
    apply("stage3_max_live_parameters",
        im.elements(zero, "stage3_max_live_parameters", at + "stage3_max_live_parameters"),
        ds.maxLiveParameters);
    apply("overlap_comm", im.flag(zero, "overlap_comm", at + "overlap_comm"), ds.overlapComm);
    apply("contiguous_gradients",
        im.flag(zero, "contiguous_gradients", at + "contiguous_gradients"), ds.contiguousGradients);
    for (const char* section : {"offload_optimizer", "offload_param"}) {
        const auto it = zero.find(section);
        if (it == zero.end() || !it->is_object())
            continue;
        if (const auto pin = im.flag(*it, "pin_memory", at + section + ".pin_memory"); pin) {
            ds.pinMemory = ds.pinMemory || *pin;
            im.result.applied.push_back(at + section + ".pin_memory = " + (*pin ? "true" : "false")
                + " (pinned host buffers counted)");
        }
    }
    static const char* counted[] = {"stage", "offload_optimizer", "offload_param", "cpu_offload",
        "reduce_bucket_size", "allgather_bucket_size", "stage3_prefetch_bucket_size",
        "stage3_max_live_parameters", "overlap_comm", "contiguous_gradients"};
    for (auto it = zero.begin(); it != zero.end(); ++it)
        if (std::find_if(std::begin(counted), std::end(counted),
                [&](const char* k) { return it.key() == k; })
            == std::end(counted))
            im.result.ignored.push_back(at + it.key() + " (no effect on the plan's memory)");
}

// Top-level keys the import does not read: listed, not errors.
void listIgnoredKeys(const json& root, JsonImport& im)
{
    static const char* known[] = {"zero_optimization", "fp16", "bf16",
        "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "optimizer",
        "train_batch_size"};
    for (auto it = root.begin(); it != root.end(); ++it)
        if (std::find_if(
                std::begin(known), std::end(known), [&](const char* k) { return it.key() == k; })
            == std::end(known))
            im.result.ignored.push_back(it.key());
}

void importBatch(const json& root, JsonImport& im)
{
    PlanInput& in = im.result.input;
    if (const auto micro = im.positive(root, "train_micro_batch_size_per_gpu",
            "train_micro_batch_size_per_gpu", int(common::kMicroBatchLimit.max))) {
        in.microBatch = *micro;
        im.result.applied.push_back(
            "train_micro_batch_size_per_gpu = " + std::to_string(*micro) + " -> micro_batch");
    }
    if (const auto accum = im.positive(root, "gradient_accumulation_steps",
            "gradient_accumulation_steps", int(common::kGradAccumLimit.max))) {
        in.gradAccum = *accum;
        im.result.applied.push_back(
            "gradient_accumulation_steps = " + std::to_string(*accum) + " -> grad_accum");
    }
    if (const auto tbs = im.positive(root, "train_batch_size", "train_batch_size", 1 << 30))
        im.result.applied.push_back("train_batch_size = " + std::to_string(*tbs)
            + " (not applied: the plan's GPUs x micro_batch x grad_accum give it)");
}

// enabled: true picks the precision; explicit false on both (or on the only
// one given) means fp32, DeepSpeed's default; "auto" keeps the base.
void importPrecision(const json& root, JsonImport& im)
{
    PlanInput& in = im.result.input;
    std::optional<bool> fp16, bf16;
    bool anyAuto = false;
    for (const char* key : {"fp16", "bf16"}) {
        const auto it = root.find(key);
        if (it == root.end() || it->is_null())
            continue;
        if (!it->is_object()) {
            im.problem(key, "got " + it->dump() + ", expected an object with \"enabled\"");
            continue;
        }
        const auto enabled = im.flag(*it, "enabled", std::string(key) + ".enabled");
        const auto flagIt = it->find("enabled");
        anyAuto = anyAuto || (flagIt != it->end() && JsonImport::isAuto(*flagIt));
        (std::string(key) == "fp16" ? fp16 : bf16) = enabled;
    }
    if (fp16.value_or(false) && bf16.value_or(false)) {
        im.problem("fp16.enabled", "fp16 and bf16 are both enabled; DeepSpeed allows one");
    } else if (fp16.value_or(false) || bf16.value_or(false)) {
        in.precision = fp16.value_or(false) ? Precision::Fp16Mixed : Precision::Bf16Mixed;
        im.result.applied.push_back(std::string(fp16.value_or(false) ? "fp16" : "bf16")
            + ".enabled = true -> precision " + std::string(toString(in.precision)));
    } else if ((fp16 || bf16) && !anyAuto) {
        in.precision = Precision::Fp32;
        im.result.applied.push_back("fp16/bf16 not enabled -> precision fp32");
    }
}

// DeepSpeed runs its FusedAdam unless optimizer.params.torch_adam asks for
// torch.optim.AdamW, whose default path is foreach.
void importTorchAdam(const json& optimizer, JsonImport& im)
{
    const auto params = optimizer.find("params");
    if (params == optimizer.end() || !params->is_object())
        return;
    const auto torchAdam = params->find("torch_adam");
    if (torchAdam == params->end())
        return;
    if (!torchAdam->is_boolean()) {
        im.problem(
            "optimizer.params.torch_adam", "got " + torchAdam->dump() + ", expected true or false");
        return;
    }
    im.result.input.optimizerKernel =
        torchAdam->get<bool>() ? OptimizerKernel::Foreach : OptimizerKernel::Fused;
    im.result.applied.push_back("optimizer.params.torch_adam = " + torchAdam->dump()
        + " -> optimizer_kernel " + std::string(toString(im.result.input.optimizerKernel)));
}

void importOptimizer(const json& root, JsonImport& im)
{
    PlanInput& in = im.result.input;
    const auto opt = root.find("optimizer");
    if (opt == root.end() || !opt->is_object())
        return;
    const auto type = opt->find("type");
    if (type == opt->end())
        return;
    if (!type->is_string()) {
        im.problem("optimizer.type", "got " + type->dump() + ", expected text");
        return;
    }
    const std::string name = common::toLower(type->get<std::string>());
    if (name == "adam" || name == "adamw") {
        in.optimizer = Optimizer::AdamW;
        im.result.applied.push_back("optimizer.type = " + type->get<std::string>() + " -> adamw");
        importTorchAdam(*opt, im);
    } else if (name == "sgd") {
        in.optimizer = Optimizer::Sgd;
        im.result.applied.push_back("optimizer.type = SGD -> sgd");
    } else {
        im.result.ignored.push_back("optimizer.type " + type->get<std::string>() + " (planned as "
            + std::string(toString(in.optimizer)) + ")");
    }
}

// zero_optimization.stage; -1 when not given (or refused).
int importStage(const json& zero, JsonImport& im)
{
    PlanInput& in = im.result.input;
    int stage = -1;
    if (const auto it = zero.find("stage"); it != zero.end() && !it->is_null()) {
        if (it->is_number_integer() && it->get<long long>() >= 0 && it->get<long long>() <= 3)
            stage = int(it->get<long long>());
        else
            im.problem("zero_optimization.stage", "got " + it->dump() + ", expected 0, 1, 2 or 3");
    }
    if (stage >= 0) {
        static const Sharding stages[] = {
            Sharding::Ddp, Sharding::Zero1, Sharding::Zero2, Sharding::Zero3};
        in.sharding = stages[stage];
        im.result.applied.push_back("zero_optimization.stage = " + std::to_string(stage)
            + " -> sharding " + std::string(toString(in.sharding)));
    }
    return stage;
}

void importOffload(const json& zero, int stage, JsonImport& im)
{
    Offload offload = Offload::None;
    const auto optimizerDevice =
        im.device(zero, "offload_optimizer", "zero_optimization.offload_optimizer");
    const auto paramDevice = im.device(zero, "offload_param", "zero_optimization.offload_param");
    if (const auto legacy = im.flag(zero, "cpu_offload", "zero_optimization.cpu_offload");
        legacy && *legacy)
        offload = Offload::Optimizer;
    if (optimizerDevice && *optimizerDevice != "none")
        offload = Offload::Optimizer;
    if (paramDevice && *paramDevice != "none") {
        if (stage != 3)
            im.problem("zero_optimization.offload_param",
                "parameter offload needs stage 3 (stage is " + std::to_string(stage) + ")");
        offload = Offload::OptimizerAndParams;
    }
    if ((optimizerDevice && *optimizerDevice == "nvme") || (paramDevice && *paramDevice == "nvme"))
        im.result.applied.push_back(
            "NVMe offload planned as CPU offload (ZeRO-Infinity's NVMe tier is not modelled)");
    im.result.input.offload = offload;
    if (offload != Offload::None)
        im.result.applied.push_back("offload devices -> offload " + std::string(toString(offload)));
}

void importDeepSpeedObject(const json& root, JsonImport& im)
{
    if (!root.is_object()) {
        im.problem("(top level)", "expected a JSON object");
        return;
    }
    listIgnoredKeys(root, im);
    importBatch(root, im);
    importPrecision(root, im);
    importOptimizer(root, im);
    const auto zero = root.find("zero_optimization");
    if (zero == root.end() || zero->is_null())
        return;
    if (!zero->is_object()) {
        im.problem("zero_optimization", "got " + zero->dump() + ", expected an object");
        return;
    }
    importOffload(*zero, importStage(*zero, im), im);
    importZeroSettings(*zero, im);
}

} // namespace

common::Result<ImportResult> parseDeepSpeedJson(
    std::string_view text, const std::string& origin, const PlanInput& base)
{
    json root;
    try {
        root = common::parseJsonDocument(text);
    } catch (const json::parse_error& e) {
        return common::Error::at(
            origin, "byte " + std::to_string(e.byte), "not valid JSON: " + std::string(e.what()));
    } catch (const std::exception& e) {
        // nlohmann reports numbers it cannot hold (1e400) as out_of_range, not parse_error.
        return common::Error::at(origin, {}, "not valid JSON: " + std::string(e.what()));
    }
    JsonImport im{origin, {base, {}, {}}, {}};
    try {
        importDeepSpeedObject(root, im);
    } catch (const std::exception& e) {
        im.problems.push_back(origin + ": unexpected content: " + e.what());
    }
    if (!im.problems.empty())
        return common::Error{common::joinLines(im.problems), {}};
    if (common::Status valid = validatePlanInput(im.result.input); !valid)
        return common::Error{origin + ": " + valid.error().message, {}};
    return im.result;
}

common::Result<ImportResult> importDeepSpeedJson(const std::string& path, const PlanInput& base)
{
    const common::Result<std::string> text = common::readFile(path, common::kMaxJsonDocumentBytes);
    if (!text)
        return text.error();
    return parseDeepSpeedJson(*text, path, base);
}

} // namespace tb::plan
