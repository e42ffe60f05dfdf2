#pragma once

#include "data/batch.h"
#include "data/tokenized_example.h"
#include "train/adamw.h"
#include "train/flat_parameters.h"

#include <torch/torch.h>

#include <cmath>
#include <span>
#include <vector>

namespace tb::train {

class LlamaForCausalLm;
class DataParallel;

struct [[nodiscard]] StepResult {
    // Mean over the step's loss tokens (of every rank), plus the router's
    // load-balancing loss times its coefficient where the model adds it.
    double loss = 0.0;
    // The load-balancing loss (unscaled), mean over the step's micro-batches
    // of every rank; NaN where the model does not compute it.
    double routerAuxLoss = std::nan("");
    double gradNorm = 0.0; // before clipping
    std::int64_t lossTokens = 0; // this rank's
    std::int64_t tokens = 0; // real (unpadded) tokens, this rank's
    std::int64_t samples = 0; // this rank's
    std::int64_t globalTokens = 0; // tokens summed over ranks
    // A mixture of experts: per layer, the (token, slot) pairs each expert
    // took over this rank's micro-batches (every position, padding too).
    std::vector<std::vector<std::int64_t>> expertTokens;
};

// Forward and backward of every micro-batch of one optimizer step, the loss
// of each normalised by the loss tokens of the whole step (so accumulating k
// micro-batches gives the gradient of one batch k times larger, whatever
// their padding), gradients gathered into the master gradient. Does not
// clip or update. The model must be in training mode for dropout. With
// `parallel`, the normaliser is the loss tokens of every rank's batches and
// the engine sums the gradients across ranks. A mixture of experts whose
// config sets output_router_logits adds router_aux_loss_coef times the mean
// of each micro-batch's load-balancing loss (RouterBalance).
StepResult accumulateStepGradients(LlamaForCausalLm& model, FlatParameters& parameters,
    const std::vector<data::Batch>& batches, std::int64_t lossChunkRows = 0,
    DataParallel* parallel = nullptr);

// accumulateStepGradients, clipping to maxGradNorm (<= 0: none), one AdamW
// update at `learningRate`, the model's copy refreshed, gradients zeroed.
// A non-finite loss or gradient norm skips the update (the caller stops).
StepResult trainStep(LlamaForCausalLm& model, FlatParameters& parameters, FlatAdamW& optimizer,
    const std::vector<data::Batch>& batches, double learningRate, double maxGradNorm,
    DataParallel* parallel = nullptr);

// The end of an optimizer step whose gradients are accumulated: one read of
// `figures` (the loss first) and of the gradient norm (into `gradNorm`),
// clipping, the AdamW update unless the loss or the norm is non-finite, the
// model's copy refreshed, gradients zeroed. Returns `figures` as read.
std::vector<double> updateAfterAccumulation(FlatParameters& parameters, FlatAdamW& optimizer,
    std::vector<torch::Tensor> figures, double learningRate, double maxGradNorm,
    DataParallel* parallel, double& gradNorm);

struct [[nodiscard]] EvalLossResult {
    double meanLoss = 0.0; // nats per loss token
    std::int64_t lossTokens = 0;
};

// Mean next-token loss over the rows' labelled tokens, in eval mode (no
// dropout) and without grad; the mode is restored after.
EvalLossResult evaluateRows(LlamaForCausalLm& model, std::span<const data::TokenizedExample> rows,
    std::size_t microBatch, std::int32_t padId);

// A batch as int64 tensors [batch, tokens]: the ids on `device`, the labels
// on the host, where selectLossRows picks the rows the loss reads.
std::pair<torch::Tensor, torch::Tensor> batchTensors(
    const data::Batch& batch, const torch::Device& device);

} // namespace tb::train
