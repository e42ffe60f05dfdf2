#include "train/merged_export.h"

#include "safetensors/writer.h"
#include "train/llama_model.h"
#include "train/nf4.h"
#include "train/staging_directory.h"

#include <filesystem>
#include <set>

namespace tb::train {

using common::Error;

namespace {

struct NamedTensor {
    std::string name;
    torch::Tensor value;
};

torch::Tensor valueOf(
    const ParameterValues& values, const std::string& name, const torch::Tensor& own)
{
    const auto found = values.find(name);
    return (found != values.end() ? found->second : own).detach();
}

} // namespace

ComputeDType storageDTypeOf(const std::string& torchDtype)
{
    if (torchDtype == "bfloat16")
        return ComputeDType::BFloat16;
    if (torchDtype == "float16")
        return ComputeDType::Float16;
    return ComputeDType::Float32;
}

common::Status exportMergedModel(LlamaForCausalLm& model, const std::string& dir,
    const std::string& modelDir, const std::string& tokenizerDir, ComputeDType storeAs,
    const ParameterValues& values)
{
    auto staging = StagingDirectory::create(dir);
    if (!staging)
        return staging.error();
    const torch::ScalarType fileType = storeAs == ComputeDType::BFloat16 ? torch::kBFloat16
        : storeAs == ComputeDType::Float16                               ? torch::kHalf
        : storeAs == ComputeDType::Float64                               ? torch::kDouble
                                                                         : torch::kFloat;
    const safetensors::DType dtype = fileType == torch::kBFloat16 ? safetensors::DType::BF16
        : fileType == torch::kHalf                                ? safetensors::DType::F16
        : fileType == torch::kDouble                              ? safetensors::DType::F64
                                                                  : safetensors::DType::F32;
    try {
        torch::NoGradGuard noGrad;
        const auto mergeType = model.dtype() == torch::kDouble ? torch::kDouble : torch::kFloat;
        const torch::Device device = model.outputWeight().device();
        // Each weight goes to host memory in the file's dtype as soon as it
        // is made: one projection merges in fp32 on the device at a time.
        const auto stored = [&](const torch::Tensor& value) {
            return value.to(torch::kCPU, fileType).contiguous();
        };
        std::vector<NamedTensor> out;
        std::set<std::string> replaced; // projections written from their layer
        for (auto& [name, layer] : model.projections()) {
            torch::Tensor weight;
            torch::Tensor bias;
            if (auto lora = std::dynamic_pointer_cast<LoraLinear>(layer)) {
                const torch::Tensor a =
                    valueOf(values, name + ".lora_A.weight", lora->loraA()).to(device, mergeType);
                const torch::Tensor b =
                    valueOf(values, name + ".lora_B.weight", lora->loraB()).to(device, mergeType);
                weight = lora->baseWeight(mergeType) + torch::matmul(b, a) * lora->scaling();
                bias = lora->baseBias();
            } else if (auto nf4 = std::dynamic_pointer_cast<Nf4Linear>(layer)) {
                weight = dequantizeNf4(nf4->weight(), mergeType);
                bias = nf4->bias();
            } else {
                continue;
            }
            replaced.insert(name + ".");
            out.push_back({name + ".weight", stored(weight)});
            if (bias.defined())
                out.push_back({name + ".bias", stored(bias)});
        }
        for (const auto& item : model.named_parameters()) {
            const std::string& name = item.key();
            const bool inReplaced = std::any_of(replaced.begin(), replaced.end(),
                [&](const std::string& prefix) { return name.starts_with(prefix); });
            if (!inReplaced)
                out.push_back({name, stored(valueOf(values, name, item.value()))});
        }
        std::vector<safetensors::TensorToWrite> tensors;
        for (const NamedTensor& tensor : out)
            tensors.push_back({tensor.name, dtype, tensor.value.sizes().vec(),
                {static_cast<const std::byte*>(tensor.value.data_ptr()), tensor.value.nbytes()}});
        if (auto status = safetensors::writeSafetensors(
                staging->file("model.safetensors"), tensors, {{"format", "pt"}});
            !status)
            return status;
    } catch (const std::exception& e) {
        return Error::at(dir, "", std::string("exporting the merged model failed: ") + e.what());
    }
    namespace fs = std::filesystem;
    auto copyIfPresent = [&](const std::string& folder, const char* name) -> common::Status {
        const std::string from = folder + "/" + name;
        if (!fs::exists(from))
            return common::Ok{};
        return copyFileAtomic(from, staging->file(name));
    };
    const std::string tokenizerFolder = fs::is_directory(tokenizerDir)
        ? tokenizerDir
        : fs::path(tokenizerDir).parent_path().string();
    for (const auto& [folder, name] : std::vector<std::pair<std::string, const char*>>{
             {modelDir, "config.json"}, {modelDir, "generation_config.json"},
             {tokenizerFolder, "tokenizer.json"}, {tokenizerFolder, "tokenizer_config.json"},
             {tokenizerFolder, "special_tokens_map.json"}, {tokenizerFolder, "tokenizer.model"}}) {
        if (auto status = copyIfPresent(folder, name); !status)
            return status;
    }
    return staging.value().commit();
}

} // namespace tb::train
