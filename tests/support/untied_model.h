#pragma once

// The demo model (stories260K, whose head is tied to its embedding) with an
// lm_head of its own, as Llama-3-8B, Mistral-7B and Qwen2.5-7B have: the
// embedding and the head become separate parameters, stored and trained
// apart. The head starts as half the embedding, so a mix-up of the two shows
// in the first step's loss. Set-up for tests: a failure stops the suite
// (write_or_stop.h).
#include "safetensors/safetensors_file.h"
#include "safetensors/writer.h"
#include "write_or_stop.h"

#include <nlohmann/json.hpp>

#include <QtGlobal>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <string>
#include <vector>

namespace tb::test {

inline std::vector<std::byte> halved(const std::vector<std::byte>& fp32)
{
    std::vector<std::byte> out(fp32.size());
    for (size_t i = 0; i + sizeof(float) <= fp32.size(); i += sizeof(float)) {
        float value = 0;
        std::memcpy(&value, fp32.data() + i, sizeof value);
        value *= 0.5f;
        std::memcpy(out.data() + i, &value, sizeof value);
    }
    return out;
}

// Writes the untied copy of the model folder `from` into `to`; returns `to`.
inline std::string writeUntiedCopy(const std::string& from, const std::string& to)
{
    namespace fs = std::filesystem;
    std::error_code error;
    fs::create_directories(to, error);
    for (const char* name :
        {"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"}) {
        if (fs::exists(from + "/" + name))
            fs::copy_file(from + "/" + name, to + "/" + name,
                fs::copy_options::overwrite_existing, error);
        if (error)
            qFatal("copying %s to %s: %s", name, to.c_str(), error.message().c_str());
    }
    std::ifstream configIn(from + "/config.json");
    nlohmann::json config = nlohmann::json::parse(configIn, nullptr, /*allow_exceptions=*/false);
    if (!config.is_object())
        qFatal("%s/config.json is not a JSON object", from.c_str());
    config["tie_word_embeddings"] = false;
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
        if (info.name == "model.embed_tokens.weight") {
            if (info.dtype != safetensors::DType::F32)
                qFatal("%s: the embedding is not fp32", from.c_str());
            tensors.push_back({"lm_head.weight", info.dtype, info.shape,
                bytes.emplace_back(halved(own))});
        }
    }
    if (const auto written = safetensors::writeSafetensors(to + "/model.safetensors", tensors);
        !written.ok())
        qFatal("%s", written.error().toString().c_str());
    return to;
}

} // namespace tb::test
