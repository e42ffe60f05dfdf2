#include "train/model_loader.h"

#include "model/multimodal_language_model.h"
#include "safetensors/tensor_store.h"
#include "safetensors/writer.h"
#include "train/llama_model.h"
#include "train/weight_slices.h"

#include <map>

namespace tb::train {

using common::Error;
using common::Result;
using common::Status;

namespace {

std::string shapeText(c10::IntArrayRef shape)
{
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

// "a, b, c and 12 more"
std::string someNames(const std::vector<std::string>& names)
{
    constexpr size_t kShown = 5;
    std::string out;
    for (size_t i = 0; i < names.size() && i < kShown; ++i)
        out += (i ? ", " : "") + names[i];
    if (names.size() > kShown)
        out += " and " + std::to_string(names.size() - kShown) + " more";
    return out;
}

std::string storeName(const safetensors::TensorStore& store)
{
    return store.files().size() == 1 ? store.files().front().path()
                                     : store.files().front().path() + " (and other shards)";
}

Status readInto(
    const safetensors::TensorStore& store, const std::string& name, const torch::Tensor& target)
{
    const safetensors::TensorInfo* info = store.find(name);
    if (c10::IntArrayRef(info->shape) != target.sizes())
        return Error::at(store.fileOf(name), "tensor '" + name + "'",
            "shape " + shapeText(info->shape) + ", but config.json implies "
                + shapeText(target.sizes()));
    return readStoredElements(store, name, 0, target);
}

} // namespace

std::shared_ptr<LlamaForCausalLm> createCausalLm(const LlamaConfig& config, ComputeDType dtype)
{
    return std::make_shared<LlamaForCausalLm>(config, torchTypeOf(dtype));
}

Status checkStoredWeights(const LlamaForCausalLm& model, const safetensors::TensorStore& store)
{
    std::map<std::string, torch::Tensor> parameters;
    for (const auto& item : model.named_parameters())
        parameters.emplace(item.key(), item.value());
    const bool tiedHeadStored = model.config().tieWordEmbeddings && store.find("lm_head.weight");
    std::vector<std::string> missing;
    for (const auto& entry : parameters) {
        if (!store.find(entry.first))
            missing.push_back(entry.first);
    }
    std::vector<std::string> leftover;
    for (const std::string& name : store.names()) {
        if (!parameters.contains(name) && !name.ends_with("rotary_emb.inv_freq")
            && !(tiedHeadStored && name == "lm_head.weight"))
            leftover.push_back(name);
    }
    if (!missing.empty())
        return Error::at(storeName(store), "",
            "lacks " + std::to_string(missing.size())
                + " tensors that config.json implies: " + someNames(missing),
            missing.size() == parameters.size() ? "are these Hugging Face (transformers) names?"
                                                : std::string());
    if (!leftover.empty())
        return Error::at(storeName(store), "",
            "holds " + std::to_string(leftover.size())
                + " tensors this model does not have: " + someNames(leftover),
            "does config.json match these weights?");
    for (const auto& [name, parameter] : parameters) {
        const safetensors::TensorInfo* info = store.find(name);
        const std::string where = "tensor '" + name + "'";
        if (!loadableType(info->dtype))
            return Error::at(store.fileOf(name), where,
                "dtype " + std::string(safetensors::dtypeName(info->dtype))
                    + " is not a float type we load",
                "weights must be F32, F16, BF16 or F64");
        if (c10::IntArrayRef(info->shape) != parameter.sizes())
            return Error::at(store.fileOf(name), where,
                "shape " + shapeText(info->shape) + ", but config.json implies "
                    + shapeText(parameter.sizes()));
    }
    return common::Ok{};
}

Status loadWeights(LlamaForCausalLm& model, const safetensors::TensorStore& store)
{
    try {
        if (auto status = checkStoredWeights(model, store); !status)
            return status;
        torch::NoGradGuard noGrad;
        for (const auto& item : model.named_parameters()) {
            if (auto status = readInto(store, item.key(), item.value()); !status)
                return status;
        }
        if (model.config().tieWordEmbeddings && store.find("lm_head.weight")) {
            torch::Tensor head = torch::empty_like(model.outputWeight());
            if (auto status = readInto(store, "lm_head.weight", head); !status)
                return status;
            if (!torch::equal(head, model.outputWeight()))
                return Error::at(store.fileOf("lm_head.weight"), "tensor 'lm_head.weight'",
                    "differs from model.embed_tokens.weight, but config.json sets "
                    "tie_word_embeddings",
                    "set tie_word_embeddings to false if the head is separate");
        }
        return common::Ok{};
    } catch (const std::exception& e) {
        return Error::at(storeName(store), "", std::string("loading failed: ") + e.what());
    }
}

Status saveWeights(LlamaForCausalLm& model, const std::string& path, ComputeDType storeAs)
{
    try {
        torch::NoGradGuard noGrad;
        const torch::ScalarType type = torchTypeOf(storeAs);
        const safetensors::DType fileType = storedTypeOf(type);
        std::vector<torch::Tensor> converted; // keeps the bytes alive until written
        std::vector<safetensors::TensorToWrite> tensors;
        for (const auto& item : model.named_parameters()) {
            converted.push_back(item.value().detach().to(torch::kCPU, type).contiguous());
            const torch::Tensor& tensor = converted.back();
            tensors.push_back({item.key(), fileType, tensor.sizes().vec(),
                {static_cast<const std::byte*>(tensor.data_ptr()), tensor.nbytes()}});
        }
        return safetensors::writeSafetensors(path, tensors, {{"format", "pt"}});
    } catch (const std::exception& e) {
        return Error::at(path, "", std::string("saving failed: ") + e.what());
    }
}

Result<safetensors::TensorStore> openModelWeights(
    const std::string& modelDir, const LlamaConfig& config)
{
    Result<safetensors::TensorStore> store = safetensors::TensorStore::open(modelDir);
    if (!store || !config.isGemma3Multimodal())
        return store;
    if (auto status = store.value().rename([&](std::string_view stored) {
            return model::languageModelTensorName(config, stored);
        });
        !status)
        return status.error();
    return store;
}

Result<std::shared_ptr<LlamaForCausalLm>> loadCausalLm(
    const std::string& modelDir, ComputeDType dtype)
{
    const Result<LlamaConfig> config = loadLlamaConfig(modelDir);
    if (!config)
        return config.error();
    const Result<safetensors::TensorStore> store = openModelWeights(modelDir, *config);
    if (!store)
        return store.error();
    std::shared_ptr<LlamaForCausalLm> model;
    try {
        model = createCausalLm(*config, dtype);
    } catch (const std::exception& e) {
        return Error::at(modelDir, "", std::string("cannot build the model: ") + e.what());
    }
    if (auto status = loadWeights(*model, *store); !status)
        return status.error();
    model->eval();
    return model;
}

const LlamaConfig& configOf(const LlamaForCausalLm& model)
{
    return model.config();
}

void setComputeThreads(int threads)
{
    at::set_num_threads(std::max(1, threads));
}

int computeThreads()
{
    return at::get_num_threads();
}

} // namespace tb::train
