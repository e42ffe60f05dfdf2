#pragma once

#include "tokenizer/json_node.h"
#include "tokenizer/vocabulary.h"

#include <memory>
#include <vector>

namespace tb::tokenizer::detail {

// What HF's post-processor adds around one encoded sequence (BOS/EOS from
// TemplateProcessing, [CLS]/[SEP] from Bert/RobertaProcessing).
class PostProcessor {
public:
    virtual ~PostProcessor() = default;
    virtual void apply(std::vector<Id>& ids) const = 0;
};

// From tokenizer.json's "post_processor" object (TemplateProcessing,
// ByteLevel, BertProcessing, RobertaProcessing, Sequence). ByteLevel only
// trims offsets in HF and adds no ids.
std::unique_ptr<PostProcessor> parsePostProcessor(const JsonNode& node);

} // namespace tb::tokenizer::detail
