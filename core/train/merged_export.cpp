#include "train/merged_export.h"

#include "common/atomic_file.h"
#include "model/multimodal_language_model.h"
#include "safetensors/writer.h"
#include "train/expert_lora.h"
#include "train/flat_parameters.h"
#include "train/llama_model.h"
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

// The rows of an expert's fused LoRA update that fold into one of its
// projections: the gate or up half of gate_up_proj's, or all of down_proj's.
struct ExpertDelta {
    ExpertLoraFactors* factors = nullptr;
    std::string factorsName; // "model.layers.0.mlp.expert_lora.gate_up_proj"
    std::int64_t expert = 0;
    std::int64_t firstRow = 0;
    std::int64_t rows = 0;
};

// One tensor of the merged file: a projection with LoRA folded in (or
// dequantised from NF4), or a parameter as it is.
struct MergedTensor {
    std::string name;
    int unit = 0;
    std::vector<std::int64_t> shape;
    std::shared_ptr<LinearLayer> projection; // null: the parameter `name` itself
    bool bias = false; // the projection's bias rather than its weight
    ExpertDelta expertDelta; // factors null: no expert LoRA folds in
};

// The expert LoRA update of projection `name` ("model.layers.0.mlp.
// experts.3.up_proj"; Mixtral's w1, w3, w2), if its layer has one.
ExpertDelta expertDeltaOf(LlamaForCausalLm& model, const std::string& name)
{
    const size_t experts = name.find(".experts.");
    if (experts == std::string::npos)
        return {};
    const std::string layerPrefix = "model.layers.";
    const size_t layer = std::stoul(name.substr(layerPrefix.size()));
    const SparseMoe* moe = model.model().layers().at(layer)->experts();
    const std::string rest = name.substr(experts + 9); // "3.up_proj"
    const std::string projection = rest.substr(rest.find('.') + 1);
    const bool down = projection == "w2" || projection == "down_proj";
    const bool up = projection == "w3" || projection == "up_proj";
    const ExpertWeight weight = down ? ExpertWeight::Down : ExpertWeight::GateUp;
    ExpertDelta delta;
    delta.factors = moe ? moe->lora(weight) : nullptr;
    if (!delta.factors)
        return {};
    delta.factorsName = name.substr(0, experts) + ".expert_lora." + expertWeightName(weight);
    delta.expert = std::stoll(rest.substr(0, rest.find('.')));
    delta.rows = down ? moe->expertShape().hiddenSize : moe->expertShape().intermediateSize;
    delta.firstRow = up ? delta.rows : 0;
    return delta;
}

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
        const ExpertDelta expertDelta = expertDeltaOf(model, name);
        torch::Tensor bias;
        if (auto lora = std::dynamic_pointer_cast<LoraLinear>(layer))
            bias = lora->baseBias();
        else if (auto nf4 = std::dynamic_pointer_cast<Nf4Linear>(layer))
            bias = nf4->bias();
        else if (!expertDelta.factors)
            continue;
        replaced.insert(name + ".");
        const int unit = unitOfParameter(name);
        out.push_back({name + ".weight", unit, {layer->outFeatures(), layer->inFeatures()}, layer,
            false, expertDelta});
        if (bias.defined())
            out.push_back({name + ".bias", unit, shapeOf(bias), layer, true, {}});
    }
    for (const auto& item : model.named_parameters()) {
        const std::string& name = item.key();
        const bool inReplaced = std::any_of(replaced.begin(), replaced.end(),
            [&](const std::string& prefix) { return name.starts_with(prefix); });
        if (!inReplaced && !isExpertLoraParameter(name))
            out.push_back({name, unitOfParameter(name), shapeOf(item.value()), nullptr, false, {}});
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

// An expert's projection (dense or NF4, frozen) with its rows of the
// experts' LoRA update added.
torch::Tensor expertWeightWithDelta(const MergedTensor& tensor, const ParameterValues& values,
    torch::ScalarType mergeType, const torch::Device& device)
{
    const ExpertDelta& delta = tensor.expertDelta;
    torch::Tensor base;
    if (auto nf4 = std::dynamic_pointer_cast<Nf4Linear>(tensor.projection))
        base = dequantizeNf4(nf4->weight(), mergeType);
    else if (auto dense = std::dynamic_pointer_cast<DenseLinear>(tensor.projection))
        base = dense->weight().detach().to(mergeType);
    TORCH_CHECK(base.defined(), tensor.name, ": LoRA on the experts over an unknown layer");
    const torch::Tensor a =
        valueOf(values, delta.factorsName + ".lora_A.weight", delta.factors->loraA());
    const torch::Tensor b =
        valueOf(values, delta.factorsName + ".lora_B.weight", delta.factors->loraB());
    const torch::Tensor update = expertLoraDelta(a.to(device), b.to(device),
        delta.factors->experts(), delta.expert, delta.factors->scaling(), mergeType);
    return base.to(device) + update.narrow(0, delta.firstRow, delta.rows);
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
    if (tensor.expertDelta.factors)
        return expertWeightWithDelta(tensor, values, mergeType, device);
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

// The base's config.json; of an image-text model, its language model's
// alone, as the export holds only the language model's weights.
common::Status writeExportConfig(
    LlamaForCausalLm& model, const std::string& modelDir, const std::string& to)
{
    const std::string from = modelDir + "/config.json";
    if (!model.config().isGemma3Multimodal())
        return std::filesystem::exists(from) ? copyFileAtomic(from, to) : common::Ok{};
    const common::Result<std::string> text = common::readFile(from);
    if (!text)
        return text.error();
    const common::Result<std::string> config = model::languageModelConfigJson(*text, from);
    if (!config)
        return config.error();
    return common::writeFileAtomic(to, *config);
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
    if (auto status = writeExportConfig(model, modelDir, staging->file("config.json")); !status)
        return status;
    for (const auto& [folder, name] :
        std::vector<std::pair<std::string, const char*>>{{modelDir, "generation_config.json"},
            {tokenizerFolder, "tokenizer.json"}, {tokenizerFolder, "tokenizer_config.json"},
            {tokenizerFolder, "special_tokens_map.json"}, {tokenizerFolder, "tokenizer.model"}}) {
        if (auto status = copyIfPresent(folder, name); !status)
            return status;
    }
    return staging.value().commit();
}

} // namespace tb::train
