"""Our trainer against transformers + peft on the same job: tokens/s and peak
memory of a full fine-tune and of LoRA, and the ratios (docs/TRAINING.md,
"Against transformers + peft").

The model has llama2.c's stories15M shape (dim 288, 6 layers, 6 heads, SwiGLU
768, vocabulary 32,000, tied), random weights written by transformers into a
temporary folder; nothing is downloaded. --family gives the same shape the
layout of another family (qwen3: q/k norms; gemma2: four norms, GeGLU,
softcaps, alternating 128-token windows; gemma3: q/k norms, local rope;
phi3: fused projections, untied; mixtral: 4 experts of 768, 2 a token;
qwen3_moe: 8 experts of 384, 2 a token, q/k norms), head_dim 48 throughout.
A mixture of experts' LoRA adapts the attention projections on both sides
(our trainer does not adapt experts). Both sides train on TinyStories text
tokenised with stories260K's tokenizer, packed into rows of the same length,
with the same micro-batch, precision (fp32), thread count, AdamW settings,
gradient clipping and LoRA settings (r 16, alpha 32, dropout 0.05, every
projection). Each run is its own process:
  ours:  `tunebench-cli train RUN.yaml --threads N` (the real CLI); step times
         from its events.jsonl;
  HF:    this script in --hf-worker mode: AutoModelForCausalLM (SDPA
         attention), peft's get_peft_model, torch.optim.AdamW(fused=True).
tokens/s: median over the steps after the first --skip, then median over
--repeat runs of each side, alternated. Peak memory: VmHWM of
the training loop (reset with /proc/self/clear_refs when the loop starts, as
our trainer does) and the whole process's peak RSS (getrusage of the child).
No figure passes or fails.

  .venv/cpu/bin/python tests/benchmarks/train/bench_vs_hf.py \\
      --cli build/default/app/cli/tunebench-cli [--threads 1] [--steps 12] [--skip 2] \\
      [--micro-batch 4] [--seq-len 256] [--methods full,lora] [--repeat 3] [--keep DIR]
      [--family llama|qwen3|gemma2|gemma3|phi3|mixtral|qwen3_moe]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOKENIZER_DIR = os.path.join(REPO, "resources", "demo", "stories260K")
TEXT = os.path.join(REPO, "tests", "data", "datasets", "tinystories", "tinystories_train_first100.txt")
SEPARATOR = "<|endoftext|>"
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
FUSED_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]  # Phi-3, for peft
ATTENTION_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]  # a mixture of experts
MOE_FAMILIES = ("mixtral", "qwen3_moe")


def lora_targets(family):
    """The same modules on both sides, as each side spells them."""
    if family in MOE_FAMILIES:
        return ATTENTION_TARGETS
    return FUSED_TARGETS if family == "phi3" else TARGETS
LORA = {"rank": 16, "alpha": 32, "dropout": 0.05}
ADAMW = {"lr": 1e-4, "weight_decay": 0.01, "betas": (0.9, 0.999), "eps": 1e-8, "clip": 1.0}


def family_config(family):
    import transformers
    shape = dict(vocab_size=32000, hidden_size=288, intermediate_size=768, num_hidden_layers=6,
                 num_attention_heads=6, num_key_value_heads=6, max_position_embeddings=256,
                 rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)
    if family == "qwen3":
        return transformers.Qwen3Config(**shape, head_dim=48, tie_word_embeddings=True)
    if family == "gemma2":
        return transformers.Gemma2Config(**shape, head_dim=48, query_pre_attn_scalar=48,
                                         sliding_window=128)
    if family == "gemma3":
        return transformers.Gemma3TextConfig(**shape, head_dim=48, query_pre_attn_scalar=48,
                                             sliding_window=128)
    if family == "mixtral":
        return transformers.MixtralConfig(**shape, head_dim=48, num_local_experts=4,
                                          num_experts_per_tok=2, tie_word_embeddings=True)
    if family == "qwen3_moe":
        return transformers.Qwen3MoeConfig(**shape, head_dim=48, num_experts=8,
                                           num_experts_per_tok=2, moe_intermediate_size=384,
                                           norm_topk_prob=True, tie_word_embeddings=True)
    if family == "phi3":
        # Phi3Config's pad id 32000 is outside this vocabulary.
        return transformers.Phi3Config(**shape, pad_token_id=0, tie_word_embeddings=False)
    return transformers.LlamaConfig(**shape, tie_word_embeddings=True)


def write_model(folder, family):
    import torch
    import transformers
    config = family_config(family)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(
        folder, safe_serialization=True)


def run_config(method, model, out, args):
    lora = ""
    if method == "lora":
        lora = (f"lora:\n  rank: {LORA['rank']}\n  alpha: {LORA['alpha']}\n"
                f"  dropout: {LORA['dropout']}\n  target_modules: [{', '.join(lora_targets(args.family))}]\n")
    return f"""model: {model}
tokenizer: {TOKENIZER_DIR}
method: {method}
{lora}data:
  train: {TEXT}
  format: text
  text_separator: "{SEPARATOR}"
  sequence_length: {args.seq_len}
  packing: true
  validation_split: 0
training:
  max_steps: {args.steps}
  micro_batch: {args.micro_batch}
  grad_accum: 1
  learning_rate: {ADAMW['lr']}
  schedule: constant
  weight_decay: {ADAMW['weight_decay']}
  adam_beta1: {ADAMW['betas'][0]}
  adam_beta2: {ADAMW['betas'][1]}
  adam_epsilon: {ADAMW['eps']}
  max_grad_norm: {ADAMW['clip']}
  seed: 42
  log_every: 1
precision: fp32
device: cpu
output:
  dir: {out}
  export: {"merged" if method == "full" else "adapter"}
"""


def run_child(command, log):
    """Runs a command, its output into `log`; returns its own peak RSS in
    bytes (wait4's rusage is that child's alone)."""
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)}: exit {process.returncode}\n{open(log).read()[-4000:]}")
    return usage.ru_maxrss * 1024


def measure_ours(method, model, root, args):
    folder = os.path.join(root, f"ours-{method}")
    shutil.rmtree(folder, ignore_errors=True)
    config = os.path.join(root, f"ours-{method}.yaml")
    with open(config, "w") as f:
        f.write(run_config(method, model, folder, args))
    peak_process = run_child([args.cli, "train", config, "--threads", str(args.threads),
                              "--quiet"], os.path.join(root, f"ours-{method}.log"))
    events = [json.loads(line) for line in open(os.path.join(folder, "events.jsonl"))]
    steps = [e for e in events if e.get("type") == "step"]
    seconds = [e["step_seconds"] for e in steps][args.skip:]
    tokens = steps[-1]["tokens"]
    return {"tokens_per_s": tokens / statistics.median(seconds),
            "peak_loop": max(e["mem_peak_bytes"] for e in steps), "peak_process": peak_process,
            "loss": [round(e["loss"], 4) for e in steps]}


def measure_hf(method, model, root, args):
    out = os.path.join(root, f"hf-{method}.json")
    command = [sys.executable, os.path.abspath(__file__), "--hf-worker", method, "--model", model,
               "--out", out] + shared_arguments(args)
    peak_process = run_child(command, os.path.join(root, f"hf-{method}.log"))
    with open(out) as f:
        result = json.load(f)
    result["peak_process"] = peak_process
    return result


def shared_arguments(args):
    return ["--threads", str(args.threads), "--steps", str(args.steps), "--skip", str(args.skip),
            "--micro-batch", str(args.micro_batch), "--seq-len", str(args.seq_len),
            "--family", args.family]


def token_rows(seq_len, rows):
    """TinyStories text through stories260K's tokenizer, BOS before each
    document, packed into rows of seq_len (run_clm's group_texts)."""
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(os.path.join(TOKENIZER_DIR, "tokenizer.json"))
    documents = [d.strip() for d in open(TEXT, encoding="utf-8").read().split(SEPARATOR)]
    ids = []
    for encoding in tokenizer.encode_batch([d for d in documents if d]):
        ids.extend(encoding.ids)
        if len(ids) >= seq_len * rows:
            break
    return [ids[i * seq_len:(i + 1) * seq_len] for i in range(rows)]


def resident_peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def hf_worker(method, args):
    import torch
    import transformers
    import peft
    torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        args.model, local_files_only=True, dtype=torch.float32)
    if method == "lora":
        model = peft.get_peft_model(model, peft.LoraConfig(
            r=LORA["rank"], lora_alpha=LORA["alpha"], lora_dropout=LORA["dropout"],
            target_modules=lora_targets(args.family),
            task_type="CAUSAL_LM"))
    model.train()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    trainable = [p for _, p in named]
    groups = [{"params": [p for _, p in named if p.dim() >= 2],
               "weight_decay": ADAMW["weight_decay"]},
              {"params": [p for _, p in named if p.dim() < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=ADAMW["lr"], betas=ADAMW["betas"], eps=ADAMW["eps"],
                                  fused=True)
    rows = torch.tensor(token_rows(args.seq_len, args.steps * args.micro_batch))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM restarts here, as our trainer's does
    seconds, losses = [], []
    for step in range(args.steps):
        batch = rows[step * args.micro_batch:(step + 1) * args.micro_batch]
        start = time.perf_counter()
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, ADAMW["clip"])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(round(loss.item(), 4))
        seconds.append(time.perf_counter() - start)
    tokens = args.micro_batch * args.seq_len
    result = {"tokens_per_s": tokens / statistics.median(seconds[args.skip:]),
              "peak_loop": resident_peak(), "loss": losses}
    with open(args.out, "w") as f:
        json.dump(result, f)


def combined(runs):
    """Median tokens/s over the repeats (each already a median over steps),
    the largest peaks."""
    return {"tokens_per_s": statistics.median(r["tokens_per_s"] for r in runs),
            "each": [round(r["tokens_per_s"]) for r in runs],
            "peak_loop": max(r["peak_loop"] for r in runs),
            "peak_process": max(r["peak_process"] for r in runs), "loss": runs[0]["loss"]}


def mib(value):
    return f"{value / 2**20:.0f} MiB"


def report(method, ours, hf):
    speed = ours["tokens_per_s"] / hf["tokens_per_s"]
    loop = ours["peak_loop"] / hf["peak_loop"]
    process = ours["peak_process"] / hf["peak_process"]
    print(f"{method:5}  tokens/s  ours {ours['tokens_per_s']:8.0f}  HF {hf['tokens_per_s']:8.0f}  "
          f"ratio {speed:.2f}x (target >= 1.3x); each run: ours {ours['each']}, HF {hf['each']}")
    print(f"{'':5}  peak RSS of the loop     ours {mib(ours['peak_loop']):>9}  "
          f"HF {mib(hf['peak_loop']):>9}  ratio {loop:.2f}x (target <= 0.9x)")
    print(f"{'':5}  peak RSS of the process  ours {mib(ours['peak_process']):>9}  "
          f"HF {mib(hf['peak_process']):>9}  ratio {process:.2f}x")
    print(f"{'':5}  loss ours {ours['loss'][:3]}..  HF {hf['loss'][:3]}..")


def arguments():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default=os.path.join(REPO, "build/default/app/cli/tunebench-cli"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--skip", type=int, default=2)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--methods", default="full,lora")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side, alternated")
    parser.add_argument("--keep", help="keep the model and runs in this folder")
    parser.add_argument("--family", default="llama",
                        choices=["llama", "qwen3", "gemma2", "gemma3", "phi3", "mixtral",
                                 "qwen3_moe"])
    parser.add_argument("--hf-worker", choices=["full", "lora"], help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    return parser.parse_args()


def main():
    args = arguments()
    if args.hf_worker:
        hf_worker(args.hf_worker, args)
        return
    for path in (args.cli, TEXT, os.path.join(TOKENIZER_DIR, "tokenizer.json")):
        if not os.path.exists(path):
            sys.exit(f"{path}: not found (build tunebench-cli; shared data beside the repository)")
    root = args.keep or tempfile.mkdtemp(prefix="bench_vs_hf.")
    os.makedirs(root, exist_ok=True)
    try:
        model = os.path.join(root, f"stories15M-shape-{args.family}")
        if not os.path.exists(os.path.join(model, "model.safetensors")):
            write_model(model, args.family)
        print(f"stories15M shape, {args.family} layout, fp32, micro-batch {args.micro_batch} x {args.seq_len} tokens, "
              f"{args.threads} thread(s), median of steps {args.skip + 1}..{args.steps}, "
              f"{args.repeat} runs of each side")
        for method in args.methods.split(","):
            # Alternated, so both sides see the same load from other processes.
            runs = [(measure_ours(method, model, root, args), measure_hf(method, model, root, args))
                    for _ in range(args.repeat)]
            report(method, combined([r[0] for r in runs]), combined([r[1] for r in runs]))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
