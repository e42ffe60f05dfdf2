#include "config/config_schema.h"

#include <array>

namespace tb::config {

namespace {

// Kept in the order the writer emits them and the docs list them.
constexpr std::array kKeys = std::to_array<KeyInfo>({
    {"name", "string", "the config file's name without .yaml",
        "Run name, shown in events and the GUI."},
    {"model", "path", "required",
        "Hugging Face model folder (config.json, *.safetensors, tokenizer)."},
    {"tokenizer", "path", "the model folder", "Folder or tokenizer.json to tokenize with."},
    {"method", "full | lora | qlora", "lora", "Fine-tuning method."},
    {"objective", "sft | dpo", "sft",
        "What the run optimises: the next-token loss, or DPO on preference pairs."},
    {"lora", "mapping", "", "LoRA settings; used by lora and qlora."},
    {"lora.rank", "integer >= 1", "8", "Rank r of the A (r x in) and B (out x r) matrices."},
    {"lora.alpha", "number > 0", "16", "Scale numerator: the update is (alpha / rank) * B A x."},
    {"lora.dropout", "number in [0, 1)", "0.05", "Dropout on the LoRA input during training."},
    {"lora.target_modules", "list of module names, or all-linear",
        "[q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]",
        "Linear layers of each block that get an adapter."},
    {"lora.target_parameters", "list of expert weight names", "[]",
        "Mixture-of-experts weights that get an adapter, as peft's target_parameters: "
        "mlp.experts.gate_up_proj, mlp.experts.down_proj (needs dropout 0)."},
    {"dpo", "mapping", "", "DPO settings; used by objective dpo."},
    {"dpo.beta", "number > 0", "0.1",
        "Strength of the tie to the reference model; IPO's regularisation tau."},
    {"dpo.loss_type", "sigmoid | ipo | robust", "sigmoid",
        "Loss on the pair's log-ratio difference (TRL's names)."},
    {"dpo.label_smoothing", "number in [0, 0.5)", "0",
        "Probability a preference is flipped: conservative DPO (sigmoid) or robust DPO."},
    {"data", "mapping", "", "Training data."},
    {"data.train", "path or list of paths", "required", "Training files, read in order."},
    {"data.format", "alpaca | chat | csv | text | preference", "alpaca",
        "How the files are laid out; preference: prompt, chosen, rejected (objective dpo)."},
    {"data.columns", "mapping", "", "Field (JSON) or column (CSV) holding each part of a record."},
    {"data.columns.prompt", "string", "instruction", "The instruction / prompt."},
    {"data.columns.input", "string", "input", "Optional context appended to the prompt."},
    {"data.columns.response", "string", "output", "The response the model learns."},
    {"data.columns.system", "string", "system", "Optional system prompt (chat templates)."},
    {"data.columns.messages", "string", "messages", "Chat data: the list of {role, content}."},
    {"data.instruction", "string", "\"\"",
        "When set, the instruction of every record; columns.prompt is not read."},
    {"data.template", "auto | alpaca | llama3 | chatml | mistral | none", "auto",
        "Prompt format; auto: the model's chat template when recognised, else alpaca."},
    {"data.sequence_length", "integer >= 2", "512", "Tokens per row."},
    {"data.packing", "boolean", "true for text, false otherwise",
        "Concatenate examples into full rows instead of padding each one."},
    {"data.validation_split", "number in [0, 1)", "0",
        "Fraction of the training records held out for evaluation."},
    {"data.validation_file", "path or list of paths", "none", "Separate validation files."},
    {"data.malformed", "skip | fail", "skip",
        "A malformed record is reported and skipped, or stops the run."},
    {"data.text_separator", "string", "\"\\n\\n\"", "Plain text: separator between documents."},
    {"training", "mapping", "", "Optimisation."},
    {"training.epochs", "integer >= 1", "1", "Passes over the training data (unless max_steps)."},
    {"training.max_steps", "integer >= 0", "0",
        "Optimizer steps to run; when > 0 it overrides epochs."},
    {"training.micro_batch", "integer >= 1", "1", "Rows per forward pass, per process."},
    {"training.grad_accum", "integer >= 1", "1", "Micro-batches accumulated per optimizer step."},
    {"training.learning_rate", "number > 0", "2e-5 for full, 2e-4 for lora and qlora",
        "Peak learning rate (AdamW)."},
    {"training.schedule", "cosine | linear | constant", "cosine",
        "Decay after warmup: to 0 (cosine, linear) or none."},
    {"training.warmup_steps", "integer >= 0", "0", "Linear warmup from 0, in optimizer steps."},
    {"training.warmup_ratio", "number in [0, 1)", "0",
        "Warmup as a fraction of the total steps; not with warmup_steps."},
    {"training.weight_decay", "number >= 0", "0",
        "Decoupled weight decay (not on norms or biases)."},
    {"training.adam_beta1", "number in [0, 1)", "0.9", "AdamW beta1."},
    {"training.adam_beta2", "number in [0, 1)", "0.999", "AdamW beta2."},
    {"training.adam_epsilon", "number > 0", "1e-8", "AdamW epsilon."},
    {"training.max_grad_norm", "number >= 0", "1",
        "Clip the global gradient norm; 0: no clipping."},
    {"training.seed", "integer >= 0", "42", "Seed of initialisation, dropout, shuffle and split."},
    {"training.eval_every", "integer >= 0", "0",
        "Evaluate every N optimizer steps; 0: only at the end."},
    {"training.log_every", "integer >= 1", "1", "Write a step event every N optimizer steps."},
    {"precision", "fp32 | bf16-mixed | bf16", "fp32",
        "fp32; bf16 compute with fp32 master weights; or pure bf16."},
    {"activation_checkpointing", "boolean", "false", "Recompute each decoder layer in backward."},
    {"device", "cpu | cuda | auto", "cpu",
        "Where to train; auto: a CUDA GPU when LibTorch sees one, else the CPU."},
    {"output", "mapping", "", "Where results go."},
    {"output.dir", "path", "runs/<name> beside the config", "Run folder."},
    {"output.checkpoint_every", "integer >= 0", "0",
        "Checkpoint every N optimizer steps; 0: at the end and on SIGINT/SIGTERM only."},
    {"output.keep_last", "integer >= 1", "2", "Checkpoints kept; older ones are deleted."},
    {"output.export", "adapter | merged | both", "merged for full, adapter otherwise",
        "What is exported at the end."},
    {"distributed", "mapping", "",
        "How ranks share the work when WORLD_SIZE > 1; ignored by a single process."},
    {"distributed.sharding", "ddp | zero1 | zero2 | zero3 | fsdp-full | fsdp-grad-op | fsdp-hybrid",
        "ddp", "What each rank keeps whole and what it shards across ranks."},
    {"distributed.offload", "none | optimizer | optimizer+params", "none",
        "Keep optimizer states (and parameters) in host memory; optimizer+params needs zero3 or "
        "fsdp-*."},
    {"distributed.timeout_seconds", "number in (0, 86400]", "300",
        "How long the rendezvous, and any collective, waits before the run fails."},
});

} // namespace

std::span<const KeyInfo> runConfigKeys()
{
    return kKeys;
}

std::vector<std::string> keysUnder(std::string_view sectionPath)
{
    std::vector<std::string> keys;
    const std::string prefix = sectionPath.empty() ? std::string() : std::string(sectionPath) + ".";
    for (const KeyInfo& key : kKeys) {
        if (!key.path.starts_with(prefix))
            continue;
        const std::string_view rest = key.path.substr(prefix.size());
        if (rest.find('.') == std::string_view::npos)
            keys.emplace_back(rest);
    }
    return keys;
}

const KeyInfo* findKey(std::string_view path)
{
    for (const KeyInfo& key : kKeys) {
        if (key.path == path)
            return &key;
    }
    return nullptr;
}

} // namespace tb::config
