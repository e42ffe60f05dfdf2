#pragma once

#include "data/batch.h"
#include "data/tokenized_example.h"
#include "train/adamw.h"
#include "train/dpo_loss.h"
#include "train/flat_parameters.h"
#include "train/train_step.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

// One optimizer step of DPO over micro-batches of preference pairs
// (docs/TRAINING.md, "DPO").
namespace tb::train {

class LlamaForCausalLm;

// What TRL's DPOTrainer logs of a step, as means over its pairs: the
// implicit rewards beta (log pi - log pi_ref) of the chosen and rejected
// completions, their margin, the share of pairs whose chosen reward is the
// higher (accuracy), and the summed completion log-probabilities of the
// policy and of the reference.
struct PreferenceFigures {
    double rewardsChosen = 0.0;
    double rewardsRejected = 0.0;
    double rewardsMargin = 0.0;
    double rewardsAccuracy = 0.0;
    double logpsChosen = 0.0;
    double logpsRejected = 0.0;
    double referenceLogpsChosen = 0.0;
    double referenceLogpsRejected = 0.0;
};

struct [[nodiscard]] DpoStepResult {
    StepResult step; // loss: the mean pair loss of the step; samples: its pairs
    PreferenceFigures figures;
};

// Each sequence's log-probability of its labelled tokens [batch]: the sum
// over positions i with labels[i + 1] != -100 of log softmax(logits_i)
// [labels[i + 1]], in fp32 (fp64 for an fp64 model). `labels` on the host.
torch::Tensor sequenceLogProbs(
    LlamaForCausalLm& model, const torch::Tensor& inputIds, const torch::Tensor& labels);

// Forward and backward of every micro-batch of one step; each batch holds
// its pairs' chosen rows, then their rejected rows, in the same order
// (data::BatchOptions::rowsPerSample 2). The reference log-probabilities
// come from the same model with every LoRA layer disabled, without
// gradient, before the policy's forward. Each pair's loss is divided by
// the step's pairs, so accumulated micro-batches give the mean over the
// step (TRL: the mean over a batch, over accumulation steps). Gradients are
// gathered into the master gradients; no update. One process only.
DpoStepResult accumulateDpoGradients(LlamaForCausalLm& model, FlatParameters& parameters,
    const std::vector<data::Batch>& batches, const DpoLossSettings& settings);

// The DPO loss and figures over preference pairs laid out as the training
// rows are (each pair's chosen row, then its rejected row), without
// gradients and with dropout off, `microBatch` pairs a forward: TRL's
// evaluation metrics, means over the pairs. One process only.
struct [[nodiscard]] PreferenceEval {
    double loss = 0.0; // the mean pair loss
    PreferenceFigures figures;
    std::int64_t pairs = 0;
    std::int64_t tokens = 0; // real tokens of both rows of every pair
};
PreferenceEval evaluateDpo(LlamaForCausalLm& model, std::span<const data::TokenizedExample> rows,
    std::size_t microBatch, std::int32_t padId, const DpoLossSettings& settings);

// accumulateDpoGradients, then clipping and one AdamW update as trainStep.
DpoStepResult trainDpoStep(LlamaForCausalLm& model, FlatParameters& parameters,
    FlatAdamW& optimizer, const std::vector<data::Batch>& batches, const DpoLossSettings& settings,
    double learningRate, double maxGradNorm);

} // namespace tb::train
