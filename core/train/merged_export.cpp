#include "train/merged_export.h"

#include "safetensors/writer.h"
#include "train/llama_model.h"
#include "train/flat_parameters.h"
#include "train/lora.h"
#include "train/nf4.h"
#include "train/staging_directory.h"
#include "train/weight_slices.h"

#include <filesystem>
#include <set>

namespace tb::train {

using common::Error;

namespace {

torch::Tensor valueOf(
    const ParameterValues& values, const std::string& name, const torch::Tensor& own)
{
    const auto found = values.find(name);
    return (found != values.end() ? found->second : own).detach();
}

// One tensor of the merged file: a projection with LoRA folded in (or
// dequantised from NF4), or a parameter as it is.
struct MergedTensor {
    std::string name;
    int unit = 0;
    std::vector<std::int64_t> shape;
    std::shared_ptr<LinearLayer> projection; // null: the parameter `name` itself
    bool bias = false; // the projection's bias rather than its weight
};

std::vector<std::int64_t> shapeOf(const torch::Tensor& tensor)
{
    return tensor.sizes().vec();
}

// Every tensor of the file, unit by unit (then by name), from the model's
// shapes alone: the header is written before any value exists.
std::vector<MergedTensor> mergedLayout(LlamaForCausalLm& model)
{
    std::vector<MergedTensor> out;
    std::set<std::string> replaced; // projections written from their layer
    for (auto& [name, layer] : model.projections()) {
        torch::Tensor bias;
        if (auto lora = std::dynamic_pointer_cast<LoraLinear>(layer))
            bias = lora->baseBias();
        else if (auto nf4 = std::dynamic_pointer_cast<Nf4Linear>(layer))
            bias = nf4->bias();
        else
            continue;
        replaced.insert(name + ".");
        const int unit = unitOfParameter(name);
        out.push_back({name + ".weight", unit, {layer->outFeatures(), layer->inFeatures()}, layer});
        if (bias.defined())
            out.push_back({name + ".bias", unit, shapeOf(bias), layer, true});
    }
    for (const auto& item : model.named_parameters()) {
        const std::string& name = item.key();
        const bool inReplaced = std::any_of(replaced.begin(), replaced.end(),
            [&](const std::string& prefix) { return name.starts_with(prefix); });
        if (!inReplaced)
            out.push_back({name, unitOfParameter(name), shapeOf(item.value()), nullptr});
    }
    std::stable_sort(out.begin(), out.end(), [](const MergedTensor& a, const MergedTensor& b) {
        return a.unit != b.unit ? a.unit < b.unit : a.name < b.name;
    });
    return out;
}

std::vector<int> unitsOf(const std::vector<MergedTensor>& layout)
{
    std::vector<int> ids;
    for (const MergedTensor& tensor : layout) {
        if (ids.empty() || ids.back() != tensor.unit)
            ids.push_back(tensor.unit);
    }
    return ids;
}

// The value of one merged tensor in fp32 (fp64 for an fp64 model), on the
// model's device.
torch::Tensor mergedValue(const MergedTensor& tensor, const ParameterValues& values,
    LlamaForCausalLm& model, torch::ScalarType mergeType)
{
    const torch::Device device = model.outputWeight().device();
    const std::string layer = tensor.name.substr(0, tensor.name.rfind('.'));
    if (auto lora = std::dynamic_pointer_cast<LoraLinear>(tensor.projection)) {
        if (tensor.bias)
            return lora->baseBias();
        const torch::Tensor a =
            valueOf(values, layer + ".lora_A.weight", lora->loraA()).to(device, mergeType);
        const torch::Tensor b =
            valueOf(values, layer + ".lora_B.weight", lora->loraB()).to(device, mergeType);
        return lora->baseWeight(mergeType) + torch::matmul(b, a) * lora->scaling();
    }
    if (auto nf4 = std::dynamic_pointer_cast<Nf4Linear>(tensor.projection))
        return tensor.bias ? nf4->bias() : dequantizeNf4(nf4->weight(), mergeType);
    auto parameters = model.named_parameters();
    return valueOf(values, tensor.name, parameters[tensor.name]);
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

void joinMergedExport(LlamaForCausalLm& model, const UnitGather& units)
{
    for (const int id : unitsOf(mergedLayout(model))) {
        units.gather(id);
        units.release(id);
    }
}

namespace {

// Appends the tensors of one unit, each made, written and dropped in turn.
common::Status appendUnit(safetensors::SafetensorsStream& stream,
    const std::vector<MergedTensor>& layout, size_t& next, int id, const ParameterValues& values,
    LlamaForCausalLm& model, torch::ScalarType fileType, const std::string& dir)
{
    try {
        torch::NoGradGuard noGrad;
        const auto mergeType = model.dtype() == torch::kDouble ? torch::kDouble : torch::kFloat;
        for (; next < layout.size() && layout[next].unit == id; ++next) {
            const torch::Tensor value = mergedValue(layout[next], values, model, mergeType)
                                            .to(torch::kCPU, fileType)
                                            .contiguous();
            if (auto status = stream.append(layout[next].name,
                    {static_cast<const std::byte*>(value.data_ptr()), value.nbytes()});
                !status)
                return status;
        }
    } catch (const std::exception& e) {
        return Error::at(dir, "", std::string("exporting the merged model failed: ") + e.what());
    }
    return common::Ok{};
}

} // namespace

common::Status exportMergedModel(LlamaForCausalLm& model, const std::string& dir,
    const std::string& modelDir, const std::string& tokenizerDir, ComputeDType storeAs,
    const ParameterValues& values, const UnitGather* units)
{
    const torch::ScalarType fileType = torchTypeOf(storeAs);
    const std::vector<MergedTensor> layout = mergedLayout(model);
    std::vector<safetensors::TensorLayout> header;
    for (const MergedTensor& tensor : layout)
        header.push_back({tensor.name, storedTypeOf(fileType), tensor.shape});
    auto staging = StagingDirectory::create(dir);
    std::optional<safetensors::SafetensorsStream> stream;
    common::Status written = common::Ok{};
    if (!staging) {
        written = staging.error();
    } else if (auto opened = safetensors::SafetensorsStream::open(
                   staging->file("model.safetensors"), header, {{"format", "pt"}});
        !opened) {
        written = opened.error();
    } else {
        stream.emplace(std::move(opened).value());
    }
    // Every unit is gathered even after a failure: the other ranks wait in
    // the same collectives.
    size_t next = 0;
    for (const int id : unitsOf(layout)) {
        const ParameterValues unitValues = units ? units->gather(id) : ParameterValues{};
        if (written)
            written = appendUnit(
                *stream, layout, next, id, units ? unitValues : values, model, fileType, dir);
        if (units)
            units->release(id);
    }
    if (written)
        written = stream->commit();
    if (!written)
        return written;
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
