#pragma once

#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"

#include <torch/torch.h>

#include <map>
#include <stdexcept>
#include <string>

// Tensors exchanged with the Python reference through safetensors files.
namespace tb::reference {

using TensorMap = std::map<std::string, torch::Tensor>;

inline torch::ScalarType torchType(safetensors::DType dtype, const std::string& where)
{
    switch (dtype) {
    case safetensors::DType::F32:
        return torch::kFloat;
    case safetensors::DType::BF16:
        return torch::kBFloat16;
    case safetensors::DType::F64:
        return torch::kDouble;
    case safetensors::DType::I64:
        return torch::kLong;
    default:
        throw std::runtime_error(where + ": dtype " + std::string(safetensors::dtypeName(dtype))
            + " is not one the reference exchanges (F32, BF16, F64, I64)");
    }
}

inline safetensors::DType fileType(torch::ScalarType type)
{
    switch (type) {
    case torch::kLong:
        return safetensors::DType::I64;
    case torch::kDouble:
        return safetensors::DType::F64;
    case torch::kBFloat16:
        return safetensors::DType::BF16;
    default:
        return safetensors::DType::F32;
    }
}

// Every tensor of the file, on the CPU; throws with the file named.
inline TensorMap readTensorFile(const std::string& path)
{
    auto file = safetensors::SafetensorsFile::open(path);
    if (!file)
        throw std::runtime_error(file.error().toString());
    TensorMap tensors;
    for (const auto& info : file->tensors()) {
        auto bytes = file->readBytes(info.name);
        if (!bytes)
            throw std::runtime_error(bytes.error().toString());
        const auto type = torchType(info.dtype, path + ": tensor '" + info.name + "'");
        std::vector<std::byte> raw = *bytes;
        tensors[info.name] = torch::from_blob(raw.data(), info.shape, type).clone();
    }
    return tensors;
}

inline void writeTensorFile(const std::string& path, const TensorMap& tensors)
{
    std::vector<torch::Tensor> held;
    std::vector<safetensors::TensorToWrite> entries;
    for (const auto& [name, tensor] : tensors) {
        held.push_back(tensor.detach().to(torch::kCPU).contiguous());
        const auto& t = held.back();
        entries.push_back({name, fileType(t.scalar_type()), t.sizes().vec(),
            {static_cast<const std::byte*>(t.data_ptr()), t.nbytes()}});
    }
    if (auto status = safetensors::writeSafetensors(path, entries, {{"format", "pt"}}); !status)
        throw std::runtime_error(status.error().toString());
}

} // namespace tb::reference
