#!/usr/bin/env python3
"""Per-rank peak memory of ZeRO-3 and FSDP at 1, 2 and 4 CPU ranks (Gloo).

Writes a random Llama of a few hundred million parameters with transformers,
fine-tunes it (full and LoRA) with the real CLI, `tunebench-cli launch`, and
prints, for every rank, the peak resident memory of loading, of the training
steps and of the export, each against the one-process run of the same method
in this script, and against the planner's prediction for the run (run_start's
"prediction": the training step's peak and the load and export phases).

Targets (issue 22): each rank's peak in every phase within 10% of the prediction;
at 4 ranks, full at most 0.4x and LoRA at most 0.5x the one-process peak.
Nothing here passes or fails on a figure; the script fails only when a run
fails. The table goes to docs/DISTRIBUTED_BENCHMARKS.md.

    .venv/cpu/bin/python tests/benchmarks/train/bench_sharded_memory.py \
        [--cli build/default/app/cli/tunebench-cli] [--work /tmp/sharded] \
        [--layers 12] [--hidden 1024] [--steps 2] [--checkpointing]
"""

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[3]
DEMO = REPO / "resources" / "demo"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "tokenizer.model")


def write_random_model(folder, args):
    import torch
    import transformers

    if (folder / "model.safetensors").exists() or (folder / "model.safetensors.index.json").exists():
        return
    config = transformers.LlamaConfig(
        hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.heads, vocab_size=args.vocab, max_position_embeddings=512,
        tie_word_embeddings=False, rms_norm_eps=1e-5)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    for name in TOKENIZER_FILES:
        source = DEMO / "stories260K" / name
        if source.exists():
            shutil.copy(source, folder / name)


def write_config(path, model, method, sharding, out, steps, checkpointing, precision):
    lines = [
        f"model: {model}",
        f"method: {method}",
        "data:",
        f"  train: {DEMO / 'tiny_instructions.jsonl'}",
        "  format: alpaca",
        "  sequence_length: 256",
        "  validation_split: 0",
        "training:",
        f"  max_steps: {steps}",
        "  micro_batch: 1",
        "  grad_accum: 1",
        "  learning_rate: 1.0e-4",
        "  schedule: constant",
        f"precision: {precision}",
        f"activation_checkpointing: {'true' if checkpointing else 'false'}",
        "distributed:",
        f"  sharding: {sharding}",
        "  timeout_seconds: 1800",
        "output:",
        f"  dir: {out}",
        "  export: " + ("both" if method == "lora" else "merged"),
    ]
    if method == "lora":
        lines += ["lora:", "  rank: 16", "  alpha: 32", "  dropout: 0.0"]
    path.write_text("\n".join(lines) + "\n")


def events_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def rank_figures(run_dir, world):
    """Load, training and export peaks and the prediction, per rank."""
    ranks = []
    for rank in range(world):
        name = "events.jsonl" if rank == 0 else f"events.rank{rank}.jsonl"
        events = events_of(run_dir / name)
        start = next(e for e in events if e["type"] == "run_start")
        steps = [e for e in events if e["type"] == "step"]
        exports = [e["export_peak_resident_bytes"] for e in events
                   if e["type"] == "log" and "export_peak_resident_bytes" in e]
        predicted = start.get("prediction", {})
        phases = predicted.get("phase_bytes_per_rank", {})
        ranks.append({
            "load": start["load"]["peak_resident_bytes"],
            "predicted_load": phases.get("load"),
            "predicted_export": phases.get("export"),
            "read": start["load"]["bytes_read"] / start["load"]["stored_bytes"],
            "train": max(s["mem_peak_bytes"] for s in steps),
            "export": max(exports) if exports else None,
            "predicted": predicted.get("peak_bytes_per_rank"),
        })
    return ranks


def run(cli, config, world, log):
    started = time.monotonic()
    command = [str(cli), "launch", str(config), "--nproc", str(world), "--", "--quiet"]
    with open(log, "w") as f:
        done = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}); see {log}")
    return time.monotonic() - started


def mib(value):
    return "-" if value is None else f"{value / 2**20:,.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cli", default=str(REPO / "build/default/app/cli/tunebench-cli"))
    parser.add_argument("--work", default="/tmp/bench_sharded_memory")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--intermediate", type=int, default=2816)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--methods", default="full lora")
    parser.add_argument("--shardings", default="zero3 fsdp-full")
    parser.add_argument("--worlds", default="2 4")
    parser.add_argument("--precision", default="fp32",
                        help="the runs' precision (fp32, bf16-mixed, bf16); the model is stored in fp32")
    parser.add_argument("--checkpointing", action="store_true",
                        help="activation checkpointing on every layer (the planner's default)")
    args = parser.parse_args()

    work = pathlib.Path(args.work)
    model = work / "model"
    model.mkdir(parents=True, exist_ok=True)
    write_random_model(model, args)
    stored = sum(p.stat().st_size for p in model.glob("*.safetensors"))
    print(f"model: {model}, {stored / 2**20:,.0f} MiB of fp32 weights "
          f"({stored // 4 / 1e6:,.0f} M parameters)")

    header = ("| method | sharding | ranks | rank | read | load MiB | load x1 | load/predicted "
              "| train MiB | train x1 | predicted MiB | train/predicted | export MiB | export x1 "
              "| export/predicted | s |")
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for method in args.methods.split():
        single = None
        runs = [("ddp", 1)] + [(s, int(w)) for s in args.shardings.split()
                               for w in args.worlds.split()]
        for sharding, world in runs:
            name = f"{method}-{sharding}-{world}"
            out = work / name
            shutil.rmtree(out, ignore_errors=True)
            config = work / f"{name}.yaml"
            write_config(config, model, method, sharding, out, args.steps, args.checkpointing,
                         args.precision)
            seconds = run(args.cli, config, world, work / f"{name}.log")
            figures = rank_figures(out, world)
            if single is None:
                single = figures[0]
            for rank, f in enumerate(figures):
                ratio = (lambda key: "-" if f[key] is None or single[key] is None
                         else f"{f[key] / single[key]:.2f}")
                versus = (lambda measured, predicted: "-" if not f[measured] or not f[predicted]
                          else f"{f[measured] / f[predicted]:.2f}")
                label = "(one process)" if world == 1 else sharding
                print(f"| {method} | {label} | {world} | {rank} | {f['read']:.3f} "
                      f"| {mib(f['load'])} | {ratio('load')} | {versus('load', 'predicted_load')} "
                      f"| {mib(f['train'])} | {ratio('train')} | {mib(f['predicted'])} "
                      f"| {versus('train', 'predicted')} | {mib(f['export'])} | {ratio('export')} "
                      f"| {versus('export', 'predicted_export')} | {seconds:.0f} |", flush=True)
            # The figures are in the events; the exports and checkpoints of
            # ten runs of this model would take about 9 GB of disk.
            for folder in ("checkpoints", "merged", "adapter"):
                shutil.rmtree(out / folder, ignore_errors=True)


if __name__ == "__main__":
    main()
