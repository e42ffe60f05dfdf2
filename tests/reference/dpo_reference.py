"""The reference side of test_dpo_reference: one DPO step of a peft LoRA
adapter, written out in torch from the papers' formulas, on the batch the
C++ test wrote (a pair's chosen rows first, then its rejected rows, labels
-100 outside the completions).

The reference log-probabilities are the same model's with the adapter
disabled (peft's disable_adapter(), as TRL's DPOTrainer takes them for a
peft model without a reference model). Sequence log-probabilities are sums
over the completion tokens, the loss the mean over the batch's pairs, the
optimizer torch.optim.AdamW as hf_reference.py's train-step sets it up.

Run as `dpo_reference.py serve`: one JSON list of arguments per stdin line,
one {"problem": ...} line per answer (hf_reference.py's protocol).
"""

import argparse
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_reference as hf  # noqa: E402  (exits 3 when a package is missing)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402


def sequence_logps(logits, labels):
    """Sum over positions i with labels[i + 1] != -100 of log softmax(logits_i)[labels[i + 1]]."""
    targets = labels[:, 1:]
    mask = targets != -100
    logps = logits[:, :-1].float().log_softmax(-1)
    picked = logps.gather(2, targets.clamp(min=0).unsqueeze(2)).squeeze(2)
    return (picked * mask).sum(1), mask.sum(1)


def pair_loss(kind, beta, smoothing, policy, reference, tokens):
    """DPO (Rafailov et al. 2023, eq. 7) with conservative label smoothing;
    robust DPO (Chowdhury et al. 2024, eq. 8); IPO (Azar et al. 2023, eq. 17)
    on log-ratios per completion token."""
    chosen_ratio = policy[0] - reference[0]
    rejected_ratio = policy[1] - reference[1]
    h = beta * (chosen_ratio - rejected_ratio)
    if kind == "sigmoid":
        return -(1 - smoothing) * F.logsigmoid(h) - smoothing * F.logsigmoid(-h)
    if kind == "robust":
        return (-(1 - smoothing) * F.logsigmoid(h) + smoothing * F.logsigmoid(-h)) / (1 - 2 * smoothing)
    if kind == "ipo":
        per_token = chosen_ratio / tokens[0].clamp(min=1) - rejected_ratio / tokens[1].clamp(min=1)
        return (per_token - 1 / (2 * beta)) ** 2
    raise hf.ReferenceError(f"unknown loss {kind!r}")


def dpo_step(args):
    model = hf.peft_lora(hf.load_model(args.model, "float32"), args.seed)
    model.save_pretrained(args.make_adapter, safe_serialization=True)
    model.train()
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if hf.decays(n, p)], "weight_decay": args.weight_decay},
              {"params": [p for n, p in named if not hf.decays(n, p)], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps)
    batch = load_file(args.inputs)
    ids, labels, mask = batch["input_ids"], batch["labels"], batch["attention_mask"]
    pairs = ids.shape[0] // 2
    with torch.no_grad(), model.disable_adapter():
        reference, _ = sequence_logps(model(input_ids=ids, attention_mask=mask).logits, labels)
    policy, tokens = sequence_logps(model(input_ids=ids, attention_mask=mask).logits, labels)
    split = lambda t: (t[:pairs], t[pairs:])  # noqa: E731
    losses = pair_loss(args.loss_type, args.beta, args.label_smoothing, split(policy),
                       split(reference), split(tokens.float()))
    loss = losses.mean()
    loss.backward()
    chosen_rewards = args.beta * (policy[:pairs] - reference[:pairs]).detach()
    rejected_rewards = args.beta * (policy[pairs:] - reference[pairs:]).detach()
    out = {
        "loss": loss.detach().reshape(1),
        "rewards_chosen": chosen_rewards.mean().reshape(1),
        "rewards_rejected": rejected_rewards.mean().reshape(1),
        "rewards_margin": (chosen_rewards - rejected_rewards).mean().reshape(1),
        "rewards_accuracy": (chosen_rewards > rejected_rewards).float().mean().reshape(1),
        "logps_chosen": policy[:pairs].detach().mean().reshape(1),
        "logps_rejected": policy[pairs:].detach().mean().reshape(1),
        "ref_logps_chosen": reference[:pairs].mean().reshape(1),
        "ref_logps_rejected": reference[pairs:].mean().reshape(1),
    }
    for name, parameter in named:
        out["grad." + hf.our_name(name)] = parameter.grad.detach().clone().contiguous()
    optimizer.step()
    for name, parameter in named:
        out["param." + hf.our_name(name)] = parameter.detach().clone().contiguous()
    save_file({k: v.float().contiguous() for k, v in out.items()}, args.out)


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def extract_prompt(pair):
    """TRL's extract_prompt on a conversational pair without a prompt: the
    turns chosen and rejected share, then the rest of each."""
    chosen, rejected = pair["chosen"], pair["rejected"]
    n = 0
    while n < min(len(chosen), len(rejected)) and chosen[n] == rejected[n]:
        n += 1
    return {"prompt": chosen[:n], "chosen": chosen[n:], "rejected": rejected[n:]}


def chat_ids(tokenizer, messages, **kwargs):
    """apply_chat_template(tokenize=True) as TRL's _tokenize calls it."""
    return list(tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                              **kwargs)["input_ids"])


def tokenize_pairs(args):
    """TRL's DPOTrainer (1.16, trl/trainer/dpo_trainer.py _prepare_dataset)
    rule, in transformers. Plain pairs: the EOS text appended to each
    completion that lacks it; prompt, prompt + chosen and prompt + rejected
    tokenized with special tokens. Conversational pairs (prompt extracted
    from chosen and rejected when absent): the prompt's turns with the
    generation prompt, prompt + chosen and prompt + rejected turns, each
    through the tokenizer's chat template, no EOS added. Either way the
    prompt is the common prefix of the three, the rest the completions."""
    import transformers
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.tokenizer, local_files_only=True)
    eos = tokenizer.eos_token
    rows = []
    with open(args.pairs, encoding="utf-8") as lines:
        for line in lines:
            pair = json.loads(line)
            if isinstance(pair["chosen"], list):
                if "prompt" not in pair:
                    pair = extract_prompt(pair)
                prompt = chat_ids(tokenizer, pair["prompt"], add_generation_prompt=True)
                chosen = chat_ids(tokenizer, pair["prompt"] + pair["chosen"])
                rejected = chat_ids(tokenizer, pair["prompt"] + pair["rejected"])
            else:
                ends = {k: pair[k] if pair[k].endswith(eos) else pair[k] + eos
                        for k in ("chosen", "rejected")}
                prompt = tokenizer(pair["prompt"])["input_ids"]
                chosen = tokenizer(pair["prompt"] + ends["chosen"])["input_ids"]
                rejected = tokenizer(pair["prompt"] + ends["rejected"])["input_ids"]
            n = min(common_prefix(prompt, chosen), common_prefix(prompt, rejected))
            rows.append({"prompt_ids": prompt[:n], "chosen_ids": chosen[n:],
                         "rejected_ids": rejected[n:]})
    with open(args.out, "w", encoding="utf-8") as out:
        json.dump(rows, out)


def parser():
    top = argparse.ArgumentParser(description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    p = commands.add_parser("make-models")
    p.add_argument("--families", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(run=hf.make_models)
    p = commands.add_parser("dpo-step")
    p.add_argument("--model", required=True)
    p.add_argument("--make-adapter", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inputs", required=True)
    p.add_argument("--loss-type", required=True)
    p.add_argument("--beta", type=float, required=True)
    p.add_argument("--label-smoothing", type=float, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--weight-decay", type=float, required=True)
    p.add_argument("--beta1", type=float, required=True)
    p.add_argument("--beta2", type=float, required=True)
    p.add_argument("--eps", type=float, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=dpo_step)
    p = commands.add_parser("tokenize-pairs")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--pairs", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=tokenize_pairs)
    return top


def run_command(argv):
    try:
        args = parser().parse_args(argv)
    except SystemExit:
        return f"dpo_reference.py: bad arguments {argv}"
    try:
        args.run(args)
    except (hf.ReferenceError, Warning) as problem:
        return f"dpo_reference.py {args.command}: {problem}"
    return None


def serve():
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin:
        try:
            problem = run_command(json.loads(line))
        except Exception:  # one failed row must not end the suite's others
            problem = traceback.format_exc()
        answers.write(json.dumps({"problem": problem}) + "\n")
        answers.flush()


if __name__ == "__main__":
    torch.set_num_threads(1)
    if sys.argv[1:] == ["serve"]:
        serve()
        sys.exit(0)
    problem = run_command(sys.argv[1:])
    if problem:
        print(problem, file=sys.stderr)
    sys.exit(1 if problem else 0)
