#pragma once

#include "common/json_text.h"

#include <cstddef>
#include <string>
#include <string_view>

// A whole JSON document from a file a user names, a model repository or
// another machine: a model's config.json, tokenizer.json and
// tokenizer_config.json, an adapter's config, a checkpoint's state, a
// safetensors index, a DeepSpeed config. Apart from json_text.h so that
// changing it rebuilds no LibTorch translation unit (json_text.h reaches
// them through metrics/event.h).
namespace tb::common {

// nlohmann's tree takes 10 to 20 times the text it was parsed from, so a
// document is refused by its size before it is parsed. The largest document
// Tunebench reads is a tokenizer.json (Gemma 3's: 33 MB); datasets, which
// may be larger, are parsed with parseJson and no size limit.
inline constexpr std::size_t kMaxJsonDocumentBytes = std::size_t{64} << 20;

// One of nlohmann's exceptions, like JsonTooDeep, so that the readers'
// catch clauses report it with the other JSON errors.
struct JsonTooLarge : nlohmann::json::exception {
    explicit JsonTooLarge(std::size_t bytes);
};

// parseJson (nesting at most kMaxJsonDepth) for text of at most
// kMaxJsonDocumentBytes: throws JsonTooLarge, JsonTooDeep and what
// nlohmann throws.
nlohmann::json parseJsonDocument(std::string_view text);

// `value` as quoted in an error message: its dump cut to `maxBytes` (a
// field may hold megabytes), invalid UTF-8 replaced instead of throwing.
std::string shownJson(const nlohmann::json& value, std::size_t maxBytes = 80);

} // namespace tb::common
