#pragma once

#include <torch/torch.h>

namespace tb::train {

// The positions that take part in the next-token loss: position i of a row
// predicts labels[i + 1], and labels of -100 (prompt, padding) are left out.
struct LossRows {
    torch::Tensor hidden; // [rows, hiddenSize], the final hidden states of those positions
    torch::Tensor targets; // [rows] int64
};
// hidden [batch, tokens, hiddenSize]; labels [batch, tokens] int64, aligned
// with the inputs (not shifted), as data::TokenizedExample holds them. Labels
// on the host choose the rows without reading the device (a GPU's labels
// would be read back to find them).
LossRows selectLossRows(const torch::Tensor& hidden, const torch::Tensor& labels);

// Rows whose fp32 logits make one chunk: about 64 MiB of logits at a time.
std::int64_t defaultLossChunkRows(std::int64_t vocabSize);

// sum over rows of -log softmax(hidden W^T)[target], divided by `normalizer`,
// computed `chunkRows` rows at a time so that the fp32 logits of the whole
// batch never exist. Logits come from a matmul in the hidden states' dtype
// and are upcast to fp32 (fp64 for fp64) for the log-softmax, as
// transformers does for a bf16 lm_head. When gradients are wanted, each
// chunk's gradient (softmax - onehot) / normalizer is turned into the
// gradients of `hidden` and `weight` right away (the scheme of Liger
// Kernel's fused linear cross-entropy), so backward holds tensors the size of
// the hidden states and of the weight, never of the logits. With `softcap`
// c > 0 the logits z become c tanh(z / c) first (Gemma 2), in the loss dtype.
// Returns a scalar in the loss dtype.
torch::Tensor chunkedCrossEntropy(const torch::Tensor& hidden, const torch::Tensor& weight,
    const torch::Tensor& targets, double normalizer, std::int64_t chunkRows = 0,
    double softcap = 0);

} // namespace tb::train
