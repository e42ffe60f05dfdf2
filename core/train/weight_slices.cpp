#include "train/weight_slices.h"

#include "safetensors/tensor_store.h"
#include "train/llama_model.h"
#include "train/nf4.h"
#include "train/tensor_storage.h"

#include <stdexcept>

namespace tb::train {

using common::Error;

std::optional<torch::ScalarType> loadableType(safetensors::DType dtype)
{
    switch (dtype) {
    case safetensors::DType::F32:
        return torch::kFloat;
    case safetensors::DType::F16:
        return torch::kHalf;
    case safetensors::DType::BF16:
        return torch::kBFloat16;
    case safetensors::DType::F64:
        return torch::kDouble;
    default:
        return std::nullopt;
    }
}

torch::ScalarType torchTypeOf(ComputeDType dtype)
{
    switch (dtype) {
    case ComputeDType::BFloat16:
        return torch::kBFloat16;
    case ComputeDType::Float16:
        return torch::kHalf;
    case ComputeDType::Float64:
        return torch::kDouble;
    case ComputeDType::Float32:
        break;
    }
    return torch::kFloat;
}

safetensors::DType storedTypeOf(torch::ScalarType type)
{
    return type == torch::kBFloat16 ? safetensors::DType::BF16
        : type == torch::kHalf      ? safetensors::DType::F16
        : type == torch::kDouble    ? safetensors::DType::F64
                                    : safetensors::DType::F32;
}

common::Status readStoredElements(const safetensors::TensorStore& store, const std::string& name,
    std::int64_t begin, const torch::Tensor& out)
{
    const safetensors::TensorInfo* info = store.find(name);
    const std::string where = "tensor '" + name + "'";
    if (!info)
        return Error::at(store.files().front().path(), where, "not in this model's weights");
    const std::optional<torch::ScalarType> type = loadableType(info->dtype);
    if (!type)
        return Error::at(store.fileOf(name), where,
            "dtype " + std::string(safetensors::dtypeName(info->dtype))
                + " is not a float type we load",
            "weights must be F32, F16, BF16 or F64");
    const std::int64_t count = out.numel();
    const auto stored = static_cast<std::int64_t>(info->elementCount());
    if (begin < 0 || begin + count > stored)
        return Error::at(store.fileOf(name), where,
            "elements [" + std::to_string(begin) + ", " + std::to_string(begin + count)
                + ") asked of a tensor of " + std::to_string(stored));
    // Read in place where the destination can take the bytes as stored; a
    // staging tensor per slice would be freed between the persistent shards
    // being allocated, and the heap keeps such holes.
    const bool inPlace = out.device().is_cpu() && out.is_contiguous() && out.scalar_type() == *type;
    torch::Tensor staging =
        inPlace ? out.reshape({-1}) : torch::empty({count}, torch::TensorOptions().dtype(*type));
    const auto elementBytes = static_cast<std::uint64_t>(staging.element_size());
    auto* bytes = static_cast<std::byte*>(staging.data_ptr());
    if (auto status = store.readRange(name, static_cast<std::uint64_t>(begin) * elementBytes,
            {bytes, static_cast<size_t>(count) * elementBytes});
        !status)
        return status;
    if (!inPlace) {
        torch::NoGradGuard noGrad;
        out.copy_(staging.view(out.sizes()));
    }
    return common::Ok{};
}

WeightSlices::WeightSlices(const safetensors::TensorStore& store, LlamaForCausalLm& model)
    : m_store(store)
{
    for (const auto& item : model.named_modules()) {
        if (auto* layer = dynamic_cast<Nf4Linear*>(item.value().get()))
            m_nf4.emplace(item.key(), layer);
    }
}

std::string WeightSlices::storedName(const std::string& name)
{
    // Appended piece by piece: GCC 12 warns falsely on std::string::replace
    // at -O3 (-Wstringop-overflow).
    constexpr std::string_view wrapper = ".base_layer.";
    std::string stored;
    size_t from = 0;
    for (size_t at = name.find(wrapper); at != std::string::npos; at = name.find(wrapper, from)) {
        stored.append(name, from, at - from);
        stored += '.';
        from = at + wrapper.size();
    }
    stored.append(name, from, std::string::npos);
    return stored;
}

void WeightSlices::readElements(const std::string& name, const torch::Tensor& tensor,
    std::int64_t begin, const torch::Tensor& out)
{
    torch::NoGradGuard noGrad;
    if (holdsStorage(tensor)) {
        out.copy_(tensor.reshape({-1}).narrow(0, begin, out.numel()));
        return;
    }
    if (auto status = readStoredElements(m_store, storedName(name), begin, out); !status)
        throw std::runtime_error(status.error().toString());
}

void WeightSlices::readBytes(const std::string& name, const torch::Tensor& tensor,
    std::int64_t begin, const torch::Tensor& out)
{
    torch::NoGradGuard noGrad;
    const size_t dot = name.rfind('.');
    const auto nf4 = m_nf4.find(name.substr(0, dot));
    if (!holdsStorage(tensor) && nf4 != m_nf4.end() && name.substr(dot + 1) != "bias")
        quantize(nf4->first, *nf4->second);
    if (holdsStorage(tensor)) {
        const torch::Tensor bytes = tensor.contiguous().reshape({-1}).view(torch::kByte);
        out.copy_(bytes.narrow(0, begin, out.numel()));
        return;
    }
    const std::int64_t size = tensor.element_size();
    // Whole elements, as usual: read in place. A temporary per tensor would
    // be freed between the persistent shards and fragment the heap.
    if (begin % size == 0 && out.numel() % size == 0 && out.storage_offset() % size == 0) {
        readElements(name, tensor, begin / size, out.view(tensor.scalar_type()));
        return;
    }
    // The whole elements that cover the bytes asked for.
    const std::int64_t first = begin / size;
    const std::int64_t end = (begin + out.numel() + size - 1) / size;
    torch::Tensor elements = torch::empty({end - first}, tensor.options().device(torch::kCPU));
    readElements(name, tensor, first, elements);
    out.copy_(elements.view(torch::kByte).narrow(0, begin - first * size, out.numel()));
}

void WeightSlices::quantize(const std::string& module, Nf4Linear& layer)
{
    const std::vector<std::int64_t>& shape = layer.weight().shape;
    torch::Tensor weight = torch::empty(shape, torch::TensorOptions().dtype(torch::kFloat));
    const std::string stored = storedName(module + ".weight");
    if (auto status = readStoredElements(m_store, stored, 0, weight); !status)
        throw std::runtime_error(status.error().toString());
    layer.assign(quantizeNf4(weight));
}

} // namespace tb::train
