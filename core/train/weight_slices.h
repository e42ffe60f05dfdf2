#pragma once

#include "common/error.h"
#include "safetensors/dtype.h"
#include "train/compute_dtype.h"

#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>

namespace tb::safetensors {
class TensorStore;
}

namespace tb::train {

class LlamaForCausalLm;
class Nf4Linear;

// The LibTorch type of a stored dtype the trainer loads (F32, F16, BF16,
// F64); nullopt for the others.
std::optional<torch::ScalarType> loadableType(safetensors::DType dtype);

// The LibTorch type of a compute dtype, and the safetensors dtype a tensor
// of a float type is stored as.
torch::ScalarType torchTypeOf(ComputeDType dtype);
safetensors::DType storedTypeOf(torch::ScalarType type);

// Elements [begin, begin + out.numel()) of the stored tensor `name`,
// flattened, read in its stored dtype and converted into `out` (any dtype,
// any device). Reads only those elements' bytes.
common::Status readStoredElements(const safetensors::TensorStore& store, const std::string& name,
    std::int64_t begin, const torch::Tensor& out);

// A model's starting values read from its safetensors files a slice at a
// time: what a rank of a ZeRO-3 or FSDP run loads, the parts its shards own,
// straight into the buffers that keep them. The model was built under
// DeferredWeights, so its weights have shapes and no storage; a tensor that
// does hold storage (a LoRA factor, a loaded adapter) is read from memory.
// QLoRA's NF4 buffers are quantised from the stored weight, a projection at
// a time, when a slice of one is first asked for (the absmax mean of double
// quantisation needs the whole projection). Failures throw, naming the file
// and the tensor.
class WeightSlices {
public:
    WeightSlices(const safetensors::TensorStore& store, LlamaForCausalLm& model);

    // Elements [begin, begin + out.numel()) of the model's tensor `name`,
    // flattened, converted into `out`.
    void readElements(const std::string& name, const torch::Tensor& tensor, std::int64_t begin,
        const torch::Tensor& out);
    // Bytes [begin, begin + out.numel()) of the tensor in its own dtype, into
    // the uint8 tensor `out`.
    void readBytes(const std::string& name, const torch::Tensor& tensor, std::int64_t begin,
        const torch::Tensor& out);

    // The stored name of a model tensor (PEFT's "base_layer." is not in the
    // file).
    static std::string storedName(const std::string& name);

private:
    void quantize(const std::string& module, Nf4Linear& layer);

    const safetensors::TensorStore& m_store;
    std::map<std::string, Nf4Linear*> m_nf4; // by module name
};

} // namespace tb::train
