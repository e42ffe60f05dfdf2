#pragma once

namespace tb::tokenizer::test {

// Sanitizer builds (the asan preset: Debug, ASan, UBSan) run about 20 times
// slower; the heavy suites do a third of their work there.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif
inline constexpr int kWorkDivisor = kSanitized ? 3 : 1;

// A tiny byte-fallback BPE with a Llama-style normalizer, written here so
// each case can see every merge it relies on.
inline constexpr const char* kTinyTokenizer = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<unk>", "special": true, "normalized": false},
    {"id": 1, "content": "<s>", "special": true, "normalized": false},
    {"id": 2, "content": "</s>", "special": true, "normalized": false}
  ],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "▁"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "byte_fallback": true,
    "fuse_unk": true,
    "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0xC3>": 3, "<0xA9>": 4, "▁": 5, "a": 6, "b": 7,
              "▁a": 8, "ab": 9, "▁ab": 10},
    "merges": ["▁ a", "a b", "▁a b"]}
})";

} // namespace tb::tokenizer::test
