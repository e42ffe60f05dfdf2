#pragma once

#include "common/error.h"
#include "config/run_config.h"
#include "data/prepare_data.h"
#include "tokenizer/tokenizer.h"
#include "train/adamw.h"
#include "train/flat_parameters.h"
#include "train/frozen_shards.h"
#include "train/lora.h"
#include "train/model_config.h"
#include "train/trainer.h"

#include <torch/torch.h>

#include <memory>
#include <optional>

namespace tb::safetensors {
class TensorStore;
}

namespace tb::train {

class LlamaForCausalLm;

// Everything a run trains with, built from its config: the model in its
// compute dtype (with LoRA layers, over an NF4 base for QLoRA), the flat
// trainable parameters and their optimizer, the data and the generator
// dropout draws from.
struct TrainingSession {
    config::RunConfig config;
    c10::Device device = c10::Device(c10::DeviceType::CPU); // where the model trains
    std::optional<tokenizer::Tokenizer> tokenizer;
    data::PreparedData data;
    std::int32_t padId = 0;
    std::shared_ptr<LlamaForCausalLm> model;
    std::unique_ptr<FlatParameters> parameters;
    // ZeRO-3 and FSDP of a LoRA/QLoRA run: the frozen base, sharded like the
    // trainable states (null where it is replicated: DDP, ZeRO-1/2, full).
    std::unique_ptr<FrozenShards> frozen;
    std::int64_t frozenBytes = 0; // the whole frozen base, as one rank holds it when replicated
    std::unique_ptr<FlatAdamW> optimizer;
    std::optional<at::Generator> dropoutGenerator;
    LoraSpec lora; // when config.usesLora()
    std::int64_t totalParameters = 0; // of the model as loaded (NF4 weights counted)
    std::int64_t trainableParameters = 0;
    std::int64_t quantizedBytes = 0; // QLoRA: NF4 storage of the base projections
    std::vector<std::string> warnings; // what preparing the model left to say
    // How the weights came in: a sharded load (ZeRO-3, FSDP) reads only this
    // rank's slices of the stored bytes (QLoRA: whole projections, quantised
    // one at a time).
    struct Load {
        bool sharded = false;
        std::uint64_t bytesRead = 0;
        std::uint64_t storedBytes = 0; // every tensor of the weight files
    } load;
};

// Seeds derived from training.seed for the streams the trainer owns (the
// shuffle's is data::kShuffleStream).
inline constexpr std::uint64_t kLoraInitStream = 102;
inline constexpr std::uint64_t kDropoutStream = 103;

// The seed of a rank's dropout stream: from step 0 at the start, or from
// `step` where a resumed run cannot restore the stream's state.
std::uint64_t dropoutSeed(std::uint64_t trainingSeed, int rank, std::int64_t step = 0);

torch::ScalarType computeTypeOf(config::Precision precision);
torch::ScalarType masterTypeOf(config::Precision precision);

// Loads the model and tokenizer, prepares the data, attaches LoRA (QLoRA:
// quantises the base projections to NF4 first), freezes and flattens the
// trainable parameters. `progress` hears "Setup" messages.
// `shard` splits the trainable states across a shard group; `rank` picks
// this rank's dropout stream (the LoRA initialisation is the same on all);
// `device` is selectTrainingDevice's choice.
common::Result<std::unique_ptr<TrainingSession>> buildSession(const config::RunConfig& config,
    const TrainerOptions& options, ShardSpec shard = {}, int rank = 0,
    const c10::Device& device = c10::Device(c10::DeviceType::CPU));

// The model part alone, for tests and benchmarks: LoRA/QLoRA/freezing and
// flat parameters over an already built fp32 model `base` (whose weights are
// the masters' starting values), moved to session.device. `model` receives
// the compute-dtype model.
common::Status prepareTrainableModel(TrainingSession& session,
    const std::shared_ptr<LlamaForCausalLm>& base, const std::string& initAdapter = {},
    ShardSpec shard = {}, int rank = 0);

// The sharded load of ZeRO-3 and FSDP: the model built without storage
// (DeferredWeights), then each rank reads from `store` only the slices of
// the trainable and frozen weights its shards own, in the master and
// compute dtypes, onto session.device; QLoRA quantises a projection at a
// time. No rank ever holds the whole model. `shard.parameters` must be set.
common::Status prepareShardedModel(TrainingSession& session, const LlamaConfig& llama,
    const safetensors::TensorStore& store, const std::string& initAdapter, ShardSpec shard,
    int rank = 0);

} // namespace tb::train
