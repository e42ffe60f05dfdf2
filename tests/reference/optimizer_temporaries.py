"""What one optimizer update allocates beyond its states, measured.

Builds transformers' LlamaForCausalLM from a config.json in the given dtype,
gives every parameter a gradient, runs one update (so the states exist), then
profiles a second one with PyTorch's profiler (profile_memory) and prints the
peak of the bytes allocated and not yet freed during it: the temporaries the
planner's optimizer-step phase counts (docs/PLANNER.md 4.12).

usage: optimizer_temporaries.py CONFIG_DIR CASE...
CASE: optimizer:kernel:dtype, e.g. adamw:foreach:float32, adafactor:auto:bfloat16
Prints one JSON object: {CASE: peak_bytes, ...}.
"""

import json
import sys

import torch
from transformers import AutoConfig, LlamaForCausalLM
from transformers.optimization import Adafactor

from profiled_peak import most_allocated_during


def make_optimizer(name, kernel, params):
    if name == "adamw":
        kwargs = {"foreach": {"foreach": True}, "fused": {"fused": True}}[kernel]
        return torch.optim.AdamW(params, lr=1e-4, **kwargs)
    if name == "adafactor":
        # The Hugging Face Trainer's optim="adafactor": relative step, no first moment.
        return Adafactor(params, scale_parameter=False, relative_step=False, warmup_init=False, lr=1e-4)
    raise SystemExit(f"unknown optimizer {name}")


def measure(config, case):
    name, kernel, dtype = case.split(":")
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(getattr(torch, dtype))
    params = list(model.parameters())
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer = make_optimizer(name, kernel, params)
    optimizer.step()
    return most_allocated_during(optimizer.step)


def main():
    config = AutoConfig.from_pretrained(sys.argv[1])
    print(json.dumps({case: measure(config, case) for case in sys.argv[2:]}))


if __name__ == "__main__":
    main()
