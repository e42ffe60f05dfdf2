"""Parameter counts of gpt-oss models as transformers builds them.

For each case name given, writes <folder>/<case>/config.json with the
configuration transformers saves (plus OpenAI's quantization_config, as the
published checkpoints carry it) and prints one JSON line mapping each case
to the parameter count of GptOssForCausalLM built on the meta device: every
tensor a state dict holds, a tied head counted once. Used by
test_gpt_oss_count.
"""

import json
import os
import sys

import torch
from transformers import GptOssConfig, GptOssForCausalLM

SMALL = dict(hidden_size=64, intermediate_size=48, num_hidden_layers=4, num_attention_heads=8,
             num_key_value_heads=2, head_dim=16, vocab_size=300, num_local_experts=6,
             num_experts_per_tok=2)

CASES = {
    "small": {},
    "no attention bias": dict(attention_bias=False),
    "tied head": dict(tie_word_embeddings=True),
    "one expert a token": dict(num_experts_per_tok=1, num_local_experts=3),
    "20b width, 2 layers": dict(hidden_size=2880, intermediate_size=2880, num_hidden_layers=2,
                                num_attention_heads=64, num_key_value_heads=8, head_dim=64,
                                vocab_size=201088, num_local_experts=32, num_experts_per_tok=4),
}


def count(model):
    seen = set()
    total = 0
    for parameter in model.parameters():
        if id(parameter) not in seen:
            seen.add(id(parameter))
            total += parameter.numel()
    return total


def main():
    folder, names = sys.argv[1], sys.argv[2:]
    counts = {}
    for name in names:
        config = GptOssConfig(**{**SMALL, **CASES[name]})
        path = os.path.join(folder, name)
        os.makedirs(path, exist_ok=True)
        config.save_pretrained(path)
        with open(os.path.join(path, "config.json")) as f:
            written = json.load(f)
        written["quantization_config"] = {"quant_method": "mxfp4"}
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(written, f)
        with torch.device("meta"):
            counts[name] = count(GptOssForCausalLM(config))
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
