#include "train/peft_adapter.h"

#include "common/atomic_file.h"
#include "common/json_document.h"
#include "model/multimodal_language_model.h"
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"
#include "train/expert_lora.h"
#include "train/llama_model.h"
#include "train/staging_directory.h"

#include <nlohmann/json.hpp>

#include <set>

namespace tb::train {

using common::Error;
using nlohmann::json;

namespace {

constexpr const char* kPrefix = "base_model.model.";
constexpr const char* kConfigFile = "adapter_config.json";
constexpr const char* kWeightsFile = "adapter_model.safetensors";

std::string shapeText(c10::IntArrayRef shape)
{
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

// The model's name of a tensor in an adapter file, or "" when it is not
// base_model.model.<name>.lora_{A,B}[.<adapter>].weight.
std::string parameterNameOf(const std::string& tensorName)
{
    if (!tensorName.starts_with(kPrefix))
        return {};
    std::string name = tensorName.substr(std::string(kPrefix).size());
    for (const char* matrix : {".lora_A.", ".lora_B."}) {
        const size_t at = name.find(matrix);
        if (at == std::string::npos)
            continue;
        const std::string rest = name.substr(at + 8);
        if (rest == "weight")
            return name;
        // PEFT's adapter name between lora_A and weight: drop it.
        if (rest.ends_with(".weight") && rest.find('.') == rest.size() - 7)
            return name.substr(0, at + 8) + "weight";
    }
    return {};
}

// A list of names (null: none, where `allowEmpty`); false when it is not one.
bool readNameList(const json& list, std::vector<std::string>& names, bool allowEmpty)
{
    if (list.is_null() && allowEmpty)
        return true;
    if (!list.is_array() || (list.empty() && !allowEmpty))
        return false;
    for (const json& name : list) {
        if (!name.is_string())
            return false;
        names.push_back(name.get<std::string>());
    }
    return true;
}

// peft's name of our parameter `name` in the model the checkpoint was made
// for: the experts' matrices as peft wraps them, the decoder under the
// multimodal model's prefix (model/multimodal_language_model.h).
std::string peftNameOf(LlamaForCausalLm& model, const std::string& name)
{
    return model::decoderModuleName(model.config(), peftParameterName(model, name));
}

// target_modules as saved: the wrapped projections' names, or for a
// multimodal model a regular expression that selects them in its language
// model alone (a name list would adapt the vision tower's q_proj as well).
json targetModulesOf(LlamaForCausalLm& model)
{
    std::set<std::string> wrapped;
    for (const auto& [name, layer] : loraLayers(model))
        wrapped.insert(name.substr(name.rfind('.') + 1));
    if (!model.config().isGemma3Multimodal())
        return std::vector<std::string>(wrapped.begin(), wrapped.end());
    std::string names;
    for (const std::string& name : wrapped)
        names += (names.empty() ? "" : "|") + name;
    std::string prefix;
    for (const char c : model::decoderModulePrefix(model.config()))
        prefix += c == '.' ? std::string("\\.") : std::string(1, c);
    return prefix + ".*\\.(" + names + ")";
}

} // namespace

std::string peftTensorName(const std::string& parameterName)
{
    return kPrefix + parameterName;
}

common::Status savePeftAdapter(LlamaForCausalLm& model, const LoraSpec& spec,
    const std::string& dir, const std::string& baseModelPath, const ParameterValues& values)
{
    auto staging = StagingDirectory::create(dir);
    if (!staging)
        return staging.error();
    try {
        torch::NoGradGuard noGrad;
        std::vector<torch::Tensor> keep;
        std::vector<safetensors::TensorToWrite> tensors;
        for (auto& item : model.named_parameters()) {
            const std::string& name = item.key();
            if (name.find(".lora_A.") == std::string::npos
                && name.find(".lora_B.") == std::string::npos)
                continue;
            const auto found = values.find(name);
            const torch::Tensor& source = found != values.end() ? found->second : item.value();
            keep.push_back(source.detach().to(torch::kCPU, torch::kFloat).contiguous());
            const torch::Tensor& tensor = keep.back();
            tensors.push_back({peftTensorName(peftNameOf(model, name)), safetensors::DType::F32,
                tensor.sizes().vec(),
                {static_cast<const std::byte*>(tensor.data_ptr()), tensor.nbytes()}});
        }
        if (tensors.empty())
            return Error::at(dir, "", "the model has no LoRA layers to save");
        if (auto status = safetensors::writeSafetensors(
                staging->file(kWeightsFile), tensors, {{"format", "pt"}});
            !status)
            return status;
    } catch (const std::exception& e) {
        return Error::at(dir, "", std::string("saving the adapter failed: ") + e.what());
    }
    // The modules wrapped, as peft finds them in the model: the fused
    // qkv_proj of Phi-3 where the run named q_proj.
    const json targets = targetModulesOf(model);
    const json config = {{"alpha_pattern", json::object()}, {"auto_mapping", nullptr},
        {"base_model_name_or_path", baseModelPath}, {"bias", "none"}, {"fan_in_fan_out", false},
        {"inference_mode", true}, {"init_lora_weights", true}, {"layers_pattern", nullptr},
        {"layers_to_transform", nullptr}, {"loftq_config", json::object()},
        {"lora_alpha", spec.alpha}, {"lora_dropout", spec.dropout}, {"megatron_config", nullptr},
        {"megatron_core", "megatron.core"}, {"modules_to_save", nullptr}, {"peft_type", "LORA"},
        {"r", spec.rank}, {"rank_pattern", json::object()}, {"revision", nullptr},
        {"target_modules", targets}, {"target_parameters", spec.targetParameters},
        {"task_type", "CAUSAL_LM"}, {"use_rslora", spec.rsLora}};
    if (auto status = common::writeFileAtomic(staging->file(kConfigFile), config.dump(2) + "\n");
        !status)
        return status;
    return staging.value().commit();
}

common::Result<LoraSpec> readPeftAdapterConfig(const std::string& dir)
{
    const std::string path = dir + "/" + kConfigFile;
    const auto text = common::readFile(path);
    if (!text)
        return text.error();
    json config;
    try {
        config = common::parseJsonDocument(*text);
    } catch (const std::exception& e) {
        return Error::at(path, "", std::string("not valid JSON: ") + e.what());
    }
    if (!config.is_object())
        return Error::at(path, "", "expected a JSON object");
    // A reference, never a copy: the checks below read each field often.
    static const json absent;
    auto field = [&](const char* key) -> const json& {
        const auto it = config.find(key);
        return it != config.end() ? *it : absent;
    };
    // What is quoted is cut: a refused list may hold megabytes.
    auto refuse = [&](const char* key, const std::string& what) {
        return Error::at(path, std::string("field '") + key + "'",
            "got " + common::shownJson(field(key)) + ", " + what);
    };
    if (field("peft_type") != "LORA")
        return refuse("peft_type", "expected \"LORA\"");
    LoraSpec spec;
    if (!field("r").is_number_integer() || field("r").get<long long>() < 1)
        return refuse("r", "expected a positive integer");
    spec.rank = field("r").get<std::int64_t>();
    if (!field("lora_alpha").is_number() || field("lora_alpha").get<double>() <= 0)
        return refuse("lora_alpha", "expected a positive number");
    spec.alpha = field("lora_alpha").get<double>();
    if (field("lora_dropout").is_number())
        spec.dropout = field("lora_dropout").get<double>();
    spec.rsLora = field("use_rslora").is_boolean() && field("use_rslora").get<bool>();
    if (field("use_dora").is_boolean() && field("use_dora").get<bool>())
        return refuse("use_dora", "DoRA adapters are not supported");
    if (!field("bias").is_null() && field("bias") != "none")
        return refuse("bias", "only adapters without trained biases (\"none\") are supported");
    if (!field("modules_to_save").is_null() && !field("modules_to_save").empty())
        return refuse("modules_to_save", "adapters that carry whole modules are not supported");
    for (const char* pattern : {"rank_pattern", "alpha_pattern"}) {
        if (!field(pattern).is_null() && !field(pattern).empty())
            return refuse(pattern, "per-layer ranks and alphas are not supported");
    }
    if (field("fan_in_fan_out").is_boolean() && field("fan_in_fan_out").get<bool>())
        return refuse("fan_in_fan_out", "expected false (Llama layers store [out, in])");
    if (!readNameList(field("target_parameters"), spec.targetParameters, true))
        return refuse("target_parameters", "expected null or a list of parameter names");
    const bool allowEmpty = !spec.targetParameters.empty();
    if (field("target_modules").is_string())
        spec.targetPattern = field("target_modules").get<std::string>();
    else if (!readNameList(field("target_modules"), spec.targetModules, allowEmpty))
        return refuse(
            "target_modules", "expected a list of module names or one regular expression");
    return spec;
}

common::Status loadPeftAdapter(LlamaForCausalLm& model, const std::string& dir)
{
    const std::string path = dir + "/" + kWeightsFile;
    auto file = safetensors::SafetensorsFile::open(path);
    if (!file)
        return file.error();
    // By peft's names, which differ from ours for the experts' matrices.
    std::map<std::string, torch::Tensor> parameters;
    for (auto& item : model.named_parameters()) {
        if (item.key().find(".lora_A.") != std::string::npos
            || item.key().find(".lora_B.") != std::string::npos)
            parameters.emplace(peftNameOf(model, item.key()), item.value());
    }
    if (parameters.empty())
        return Error::at(path, "", "the model has no LoRA layers to load into");
    std::set<std::string> seen;
    try {
        torch::NoGradGuard noGrad;
        for (const auto& info : file->tensors()) {
            const std::string where = "tensor '" + info.name + "'";
            const std::string name = parameterNameOf(info.name);
            const auto target = parameters.find(name);
            if (name.empty() || target == parameters.end())
                return Error::at(path, where, "is not a LoRA matrix of this model's layers",
                    "were the adapter's target modules and the model the same?");
            if (!seen.insert(name).second)
                return Error::at(path, where, "appears twice (with two adapter names?)");
            const auto type = info.dtype == safetensors::DType::F32 ? torch::kFloat
                : info.dtype == safetensors::DType::BF16            ? torch::kBFloat16
                : info.dtype == safetensors::DType::F16             ? torch::kHalf
                : info.dtype == safetensors::DType::F64             ? torch::kDouble
                                                                    : torch::kChar;
            if (type == torch::kChar)
                return Error::at(path, where,
                    "dtype " + std::string(safetensors::dtypeName(info.dtype))
                        + " is not a float type");
            if (c10::IntArrayRef(info.shape) != target->second.sizes())
                return Error::at(path, where,
                    "shape " + shapeText(info.shape) + ", expected "
                        + shapeText(target->second.sizes()),
                    "is the adapter's rank the one configured?");
            torch::Tensor staging = torch::empty(target->second.sizes(), type);
            if (auto status = file->read(
                    info, {static_cast<std::byte*>(staging.data_ptr()), info.byteCount()});
                !status)
                return status;
            target->second.copy_(staging);
        }
    } catch (const std::exception& e) {
        return Error::at(path, "", std::string("loading the adapter failed: ") + e.what());
    }
    if (seen.size() != parameters.size()) {
        for (const auto& entry : parameters) {
            if (!seen.contains(entry.first))
                return Error::at(path, "",
                    "lacks " + peftTensorName(entry.first) + " ("
                        + std::to_string(parameters.size() - seen.size()) + " matrices missing)");
        }
    }
    return common::Ok{};
}

} // namespace tb::train
