#pragma once

// Variants of the demo model (stories260K: five layers, tied head, fp32)
// written for tests. Set-up for tests: a failure stops the suite
// (write_or_stop.h).
//
// * Untied: an lm_head of its own, as Llama-3-8B, Mistral-7B and
//   Qwen2.5-7B have; the head starts as half the embedding, so a mix-up of
//   the two shows in the first step's loss.
// * Gemma 2 and 3: the same weights read as a Gemma decoder ((1 + w) norms,
//   four per layer, GeGLU, scaled embeddings, sliding-window layers
//   alternating with global ones; Gemma 2's softcapped scores and logits,
//   Gemma 3's q/k norms and per-layer-type rope), the norms it adds written.
// * Mixtral: each layer's MLP becomes four experts, two a token, expert j
//   the dense MLP scaled by 1 + j/4, routed by rows of the layer's q_proj.
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"
#include "write_or_stop.h"

#include <nlohmann/json.hpp>

#include <QtGlobal>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <list>
#include <string>
#include <vector>

namespace tb::test {

inline std::vector<std::byte> scaled(const std::vector<std::byte>& fp32, float factor)
{
    std::vector<std::byte> out(fp32.size());
    for (size_t i = 0; i + sizeof(float) <= fp32.size(); i += sizeof(float)) {
        float value = 0;
        std::memcpy(&value, fp32.data() + i, sizeof value);
        value *= factor;
        std::memcpy(out.data() + i, &value, sizeof value);
    }
    return out;
}

inline std::vector<std::byte> halved(const std::vector<std::byte>& fp32)
{
    return scaled(fp32, 0.5f);
}

// The tensors a variant adds after one of the model's: (name, values)
// borrowed from `bytes`, which outlives the writing. The model's own tensor
// is the last of `tensors`; a variant that replaces it pops it.
using ExtraTensors = std::function<void(const safetensors::TensorInfo& info,
    const std::vector<std::byte>& values, std::list<std::vector<std::byte>>& bytes,
    std::vector<safetensors::TensorToWrite>& tensors)>;

// Copies the model folder `from` into `to` with `changes` merged into its
// config.json and the tensors `extra` adds; returns `to`.
inline std::string writeModelVariant(const std::string& from, const std::string& to,
    const nlohmann::json& changes, const ExtraTensors& extra)
{
    namespace fs = std::filesystem;
    std::error_code error;
    fs::create_directories(to, error);
    for (const char* name :
        {"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"}) {
        if (fs::exists(from + "/" + name))
            fs::copy_file(
                from + "/" + name, to + "/" + name, fs::copy_options::overwrite_existing, error);
        if (error)
            qFatal("copying %s to %s: %s", name, to.c_str(), error.message().c_str());
    }
    std::ifstream configIn(from + "/config.json");
    nlohmann::json config = nlohmann::json::parse(configIn, nullptr, /*allow_exceptions=*/false);
    if (!config.is_object())
        qFatal("%s/config.json is not a JSON object", from.c_str());
    config.update(changes);
    writeOrStop(to + "/config.json", config.dump(2));

    auto file = safetensors::SafetensorsFile::open(from + "/model.safetensors");
    if (!file)
        qFatal("%s", file.error().toString().c_str());
    std::list<std::vector<std::byte>> bytes; // the writer borrows them
    std::vector<safetensors::TensorToWrite> tensors;
    for (const safetensors::TensorInfo& info : file->tensors()) {
        auto read = file->readBytes(info.name);
        if (!read)
            qFatal("%s", read.error().toString().c_str());
        const auto& own = bytes.emplace_back(std::move(read).value());
        tensors.push_back({info.name, info.dtype, info.shape, own});
        if (info.dtype != safetensors::DType::F32)
            qFatal("%s: %s is not fp32", from.c_str(), info.name.c_str());
        extra(info, own, bytes, tensors);
    }
    if (const auto written = safetensors::writeSafetensors(to + "/model.safetensors", tensors);
        !written.ok())
        qFatal("%s", written.error().toString().c_str());
    return to;
}

// The untied copy of `from` in `to`.
inline std::string writeUntiedCopy(const std::string& from, const std::string& to)
{
    return writeModelVariant(from, to, {{"tie_word_embeddings", false}},
        [](const auto& info, const auto& values, auto& bytes, auto& tensors) {
            if (info.name == "model.embed_tokens.weight")
                tensors.push_back(
                    {"lm_head.weight", info.dtype, info.shape, bytes.emplace_back(halved(values))});
        });
}

// Four bytes of fp32 `value` repeated to `bytes`.
inline std::vector<std::byte>& filled(
    std::list<std::vector<std::byte>>& store, std::uint64_t bytes, float value)
{
    std::vector<std::byte>& out = store.emplace_back(bytes);
    for (size_t i = 0; i + sizeof value <= out.size(); i += sizeof value)
        std::memcpy(out.data() + i, &value, sizeof value);
    return out;
}

// The Gemma 2 (`generation` 2) or Gemma 3 (3) reading of `from` in `to`:
// caps (Gemma 2) and a window small enough to bite at the tests' sequence
// lengths, local and global layers alternating; Gemma 3's own rope bases and
// a linear scaling of the global one. The added norms scale by 1 + 0.25.
inline std::string writeGemmaCopy(const std::string& from, const std::string& to, int generation)
{
    nlohmann::json changes = {{"hidden_activation", "gelu_pytorch_tanh"},
        {"hidden_act", "gelu_pytorch_tanh"}, {"query_pre_attn_scalar", 16}, {"sliding_window", 8},
        {"tie_word_embeddings", true}};
    if (generation == 2) {
        changes.update({{"model_type", "gemma2"}, {"architectures", {"Gemma2ForCausalLM"}},
            {"attn_logit_softcapping", 2.0}, {"final_logit_softcapping", 4.0}});
    } else {
        changes.update({{"model_type", "gemma3_text"}, {"architectures", {"Gemma3ForCausalLM"}},
            {"sliding_window_pattern", 2}, {"rope_local_base_freq", 10000.0},
            {"rope_theta", 1000000.0},
            {"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}}});
    }
    const std::int64_t headDim = 8; // the demo model's
    return writeModelVariant(
        from, to, changes, [generation](const auto& info, const auto&, auto& bytes, auto& tensors) {
            const std::string suffix = ".post_attention_layernorm.weight";
            if (!info.name.ends_with(suffix))
                return;
            const std::string layer = info.name.substr(0, info.name.size() - suffix.size());
            const auto& quarter = filled(bytes, info.byteCount(), 0.25f);
            for (const char* norm :
                {".pre_feedforward_layernorm.weight", ".post_feedforward_layernorm.weight"})
                tensors.push_back({layer + norm, info.dtype, info.shape, quarter});
            if (generation == 2)
                return;
            const auto& headQuarter = filled(bytes, headDim * sizeof(float), 0.25f);
            for (const char* norm : {".self_attn.q_norm.weight", ".self_attn.k_norm.weight"})
                tensors.push_back({layer + norm, info.dtype, {headDim}, headQuarter});
        });
}

// The Mixtral reading of `from` in `to`: four experts a layer, two a token,
// expert j the layer's dense MLP scaled by 1 + j/4 (so routing changes the
// output), the router the first four rows of the layer's q_proj. `balanced`:
// the loss adds the router's load-balancing loss, weighted 0.05.
inline std::string writeMixtralCopy(
    const std::string& from, const std::string& to, bool balanced = false)
{
    constexpr int kExperts = 4;
    const nlohmann::json changes = {{"model_type", "mixtral"},
        {"architectures", {"MixtralForCausalLM"}}, {"num_local_experts", kExperts},
        {"num_experts_per_tok", 2}, {"router_aux_loss_coef", balanced ? 0.05 : 0.02},
        {"output_router_logits", balanced}, {"sliding_window", nullptr}};
    return writeModelVariant(from, to, changes,
        [](const safetensors::TensorInfo& info, const std::vector<std::byte>& values,
            std::list<std::vector<std::byte>>& bytes,
            std::vector<safetensors::TensorToWrite>& tensors) {
            const size_t mlp = info.name.find(".mlp.");
            if (info.name.ends_with(".self_attn.q_proj.weight")) {
                const std::string layer = info.name.substr(0, info.name.find(".self_attn."));
                const std::uint64_t rowBytes = info.byteCount() / info.shape.at(0);
                const auto& rows = bytes.emplace_back(
                    values.begin(), values.begin() + std::ptrdiff_t(kExperts * rowBytes));
                tensors.push_back({layer + ".block_sparse_moe.gate.weight", info.dtype,
                    {kExperts, info.shape.at(1)}, rows});
            }
            if (mlp == std::string::npos)
                return;
            tensors.pop_back(); // the dense MLP becomes the experts
            const std::string layer = info.name.substr(0, mlp);
            const std::string projection = info.name.substr(mlp + 5);
            const std::string renamed = projection == "gate_proj.weight" ? "w1.weight"
                : projection == "up_proj.weight"                         ? "w3.weight"
                                                                         : "w2.weight";
            for (int e = 0; e < kExperts; ++e)
                tensors.push_back({layer + ".block_sparse_moe.experts." + std::to_string(e) + "."
                        + renamed,
                    info.dtype, info.shape, bytes.emplace_back(scaled(values, 1.0f + 0.25f * e))});
        });
}

} // namespace tb::test
