#pragma once

#include "common/error.h"
#include "train/compute_dtype.h"
#include "train/model_config.h"

#include <memory>
#include <string>

namespace tb::safetensors {
class TensorStore;
}

namespace tb::train {

class LlamaForCausalLm; // train/llama_model.h; this header stays free of LibTorch

// A model with zero weights in `dtype` (fill them with loadWeights or
// LlamaForCausalLm::initializeRandom).
std::shared_ptr<LlamaForCausalLm> createCausalLm(const LlamaConfig& config, ComputeDType dtype);

// Copies every parameter from `store`, converting F32/F16/BF16/F64 to the
// model's dtype. Checks shapes against the config and refuses tensors
// missing or left over, naming them (rotary_emb.inv_freq buffers, which old
// checkpoints carry, are recomputed and ignored; a stored lm_head.weight of
// a tied model must equal the embedding).
common::Status loadWeights(LlamaForCausalLm& model, const safetensors::TensorStore& store);
// loadWeights' checks alone, reading no tensor bytes: names, shapes and
// dtypes (for a model built under DeferredWeights, loaded in slices).
common::Status checkStoredWeights(
    const LlamaForCausalLm& model, const safetensors::TensorStore& store);

// Writes every parameter by its Hugging Face name to one .safetensors file
// (atomically), converted to `storeAs`; metadata "format": "pt" as
// transformers writes it.
common::Status saveWeights(LlamaForCausalLm& model, const std::string& path, ComputeDType storeAs);

// The safetensors weights of a model folder by our names: of a multimodal
// checkpoint, its language model's alone (model/multimodal_language_model.h);
// the store's leftOutCount() says how many tensors were left out.
common::Result<safetensors::TensorStore> openModelWeights(
    const std::string& modelDir, const LlamaConfig& config);

// config.json and the safetensors weights of a Hugging Face model folder.
common::Result<std::shared_ptr<LlamaForCausalLm>> loadCausalLm(
    const std::string& modelDir, ComputeDType dtype);

// The model's config, for callers that do not include LibTorch.
const LlamaConfig& configOf(const LlamaForCausalLm& model);

// Intra-op threads for LibTorch (it may default to one on small machines).
void setComputeThreads(int threads);
int computeThreads();

} // namespace tb::train
