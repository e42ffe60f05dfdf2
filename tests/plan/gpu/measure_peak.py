#!/usr/bin/env python3
"""Measured against predicted: peak GPU memory and tokens/s of real training
steps with PyTorch + transformers (+ peft), next to `tunebench-cli plan --json`
for the same configuration. For the GPU machine (../shared/GPU.md): models are
random-initialised from a preset's architecture, nothing is downloaded.

    python3 tests/plan/gpu/measure_peak.py --cli build/.../tunebench-cli \
        --preset presets/models/smollm2-1.7b.yaml --method full --micro-batch 4 --seq-len 2048

Prints one JSON object: the configuration, torch's max allocated and reserved
bytes, the device memory in use (CUDA context included), tokens/s, and the
planner's per-GPU total and components. Status: written for calibration
(docs/PLANNER.md, section 10); it has not been run in this repository yet.
"""
import argparse
import json
import subprocess
import time

import torch
import yaml
from transformers import LlamaConfig, LlamaForCausalLM


def llama_config(preset):
    return LlamaConfig(
        hidden_size=preset["hidden_size"], intermediate_size=preset["intermediate_size"],
        num_hidden_layers=preset["num_layers"], num_attention_heads=preset["num_heads"],
        num_key_value_heads=preset.get("num_kv_heads", preset["num_heads"]),
        head_dim=preset.get("head_dim"), vocab_size=preset["vocab_size"],
        tie_word_embeddings=preset["tie_word_embeddings"],
        attention_bias=preset.get("qkv_bias", False), max_position_embeddings=8192)


def planner(args, preset_name):
    command = [args.cli, "plan", "--model", preset_name, "--method", args.method, "--gpu", args.gpu,
               "--precision", "bf16-mixed" if args.method != "full" else "bf16",
               "--micro-batch", str(args.micro_batch), "--seq-len", str(args.seq_len), "--grad-accum", "1",
               "--loss", "full-fp32", "--attention", "sdpa", "--lora-dropout", str(args.lora_dropout),
               "--lora-rank", str(args.lora_rank), "--json"]
    if not args.grad_ckpt:
        command.append("--no-grad-ckpt")
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--method", choices=["full", "lora"], default="lora")
    parser.add_argument("--gpu", default="H100")
    parser.add_argument("--micro-batch", type=int, default=1)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument("--lora-dropout", type=float, default=0.05)
    parser.add_argument("--grad-ckpt", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()

    with open(args.preset) as f:
        preset = yaml.safe_load(f)
    torch.manual_seed(0)
    device = torch.device("cuda")
    torch.cuda.init()
    free_before, total = torch.cuda.mem_get_info()
    model = LlamaForCausalLM(llama_config(preset)).to(device=device, dtype=torch.bfloat16)
    model.config._attn_implementation = "sdpa"
    if args.grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if args.method == "lora":
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=args.lora_rank, lora_alpha=2 * args.lora_rank,
                                                 lora_dropout=args.lora_dropout, target_modules="all-linear"))
        if args.grad_ckpt:
            model.enable_input_require_grads()
    # Full fine-tunes run in pure bf16 (the planner's "bf16": 2 + 2 + 4 bytes per
    # parameter); LoRA keeps fp32 adapters over a bf16 base, as PEFT does.
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5)
    tokens = torch.randint(0, preset["vocab_size"], (args.micro_batch, args.seq_len), device=device)
    torch.cuda.reset_peak_memory_stats()
    times = []
    for step in range(args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.method == "lora"):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    free_after, _ = torch.cuda.mem_get_info()
    step = sorted(times[1:])[len(times[1:]) // 2]
    predicted = planner(args, preset["name"])
    print(json.dumps({
        "date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__, "config": vars(args), "device_total_bytes": total,
        "measured": {"max_allocated_bytes": torch.cuda.max_memory_allocated(),
                     "max_reserved_bytes": torch.cuda.max_memory_reserved(),
                     "device_in_use_bytes": total - free_after,
                     "context_bytes": total - free_before,
                     "tokens_per_second": args.micro_batch * args.seq_len / step},
        "predicted": {"per_gpu_bytes": predicted["per_gpu_bytes"],
                      "tokens_per_second_at_preset_utilisation": predicted["tokens_per_second"]},
    }, indent=2))


if __name__ == "__main__":
    main()
