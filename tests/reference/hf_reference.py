"""The Hugging Face side of test_hf_reference: transformers, peft and
torch.optim.AdamW compute what our trainer computes, from the same files.

Every subcommand reads and writes safetensors files; the C++ test compares.
Nothing is downloaded: models load from local folders only, and a missing or
unexpected weight, or any warning (peft's "missing adapter keys" among them),
fails the run with exit status 1. Exit status 3: a package is missing.
"""

import argparse
import json
import os
import re
import sys
import traceback
import warnings

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

try:
    import torch
    import transformers
    import peft
    from safetensors.torch import load_file, save_file
except ImportError as missing:
    print(f"{sys.executable}: cannot import {missing.name}; install packaging/python-reference.txt "
          "into this environment (packaging/setup.sh test does)", file=sys.stderr)
    sys.exit(3)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
FUSED_LORA_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]  # Phi-3
# A mixture of experts: LoRA on attention by target_modules; the experts'
# fused 3-D weights by peft's target_parameters (--expert-lora).
ATTENTION_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
EXPERT_PARAMETERS = {"both": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
                     "gate_up": ["mlp.experts.gate_up_proj"],
                     "down": ["mlp.experts.down_proj"]}
MOE_TYPES = ("mixtral", "qwen3_moe")
PEFT_PREFIX = "base_model.model."
# Gemma 3's image-text model: its decoder under model.language_model, as
# transformers 5 names it; our trainer trains that language model alone.
MULTIMODAL_TYPES = ("gemma3",)
LANGUAGE_MODEL_PREFIX = "model.language_model."
# transformers 5 stores Gemma 3 as Google published it (language_model.model.*,
# vision_tower.*); transformers 4.52 to 4.57 stored its own module names,
# which fine-tuned checkpoints of that time carry: stored name prefixes.
NESTED_LAYOUT = (("language_model.model.", "model.language_model."),
                 ("language_model.lm_head.", "lm_head."),
                 ("vision_tower.", "model.vision_tower."),
                 ("multi_modal_projector.", "model.multi_modal_projector."))
NESTED_SUFFIX = "-nested"


class ReferenceError(Exception):
    pass


# A mixture of experts with the router's load-balancing loss in its loss,
# weighted so that it moves the gradients well beyond rounding.
BALANCED_SUFFIX = "-balanced"
BALANCE_COEFFICIENT = 0.3


def tiny_config(family):
    """Small configurations of each family, with what sets it apart turned on."""
    if family.endswith(BALANCED_SUFFIX):
        config = tiny_config(family[:-len(BALANCED_SUFFIX)])
        config.output_router_logits = True
        config.router_aux_loss_coef = BALANCE_COEFFICIENT
        return config
    common = dict(vocab_size=96, hidden_size=32, intermediate_size=56, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=64, rms_norm_eps=1e-5)
    if family == "llama2":
        return transformers.LlamaConfig(**common, num_key_value_heads=4,
                                        tie_word_embeddings=False,
                                        rope_parameters={"rope_type": "default",
                                                         "rope_theta": 10000.0})
    if family == "llama3":
        rope = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8}
        return transformers.LlamaConfig(**common, num_key_value_heads=2,
                                        tie_word_embeddings=True, rope_parameters=rope)
    if family == "mistral":
        return transformers.MistralConfig(**common, num_key_value_heads=2, sliding_window=5,
                                          tie_word_embeddings=False)
    if family == "qwen2":
        return transformers.Qwen2Config(**common, num_key_value_heads=2,
                                        tie_word_embeddings=True)
    if family == "qwen3":
        # head_dim set apart from hidden / heads, as Qwen3's published sizes do.
        return transformers.Qwen3Config(**common, num_key_value_heads=2, head_dim=12,
                                        tie_word_embeddings=True)
    if family == "gemma2":
        # A window shorter than the test's 12 tokens, softcaps that bite on
        # small random weights, a score scale apart from head_dim's.
        return transformers.Gemma2Config(**common, num_key_value_heads=2, head_dim=8,
                                         query_pre_attn_scalar=12, sliding_window=5,
                                         attn_logit_softcapping=1.5,
                                         final_logit_softcapping=2.5)
    if family == "gemma3":
        # One local layer (window 5, its own rope base) and one global layer
        # (linear rope scaling), q/k norms, no softcaps (Gemma 3's defaults).
        rope = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                "full_attention": {"rope_type": "linear", "factor": 4.0,
                                   "rope_theta": 1000000.0}}
        return transformers.Gemma3TextConfig(**common, num_key_value_heads=2, head_dim=8,
                                             query_pre_attn_scalar=12, sliding_window=5,
                                             layer_types=["sliding_attention", "full_attention"],
                                             rope_parameters=rope)
    if family == "gemma3-vl":
        # Gemma 3's image-text model: the gemma3 language model above beside
        # a one-layer SigLIP tower (two 14-pixel patches a side, four image
        # tokens), which text alone never reaches.
        vision = transformers.SiglipVisionConfig(hidden_size=16, intermediate_size=24,
                                                 num_hidden_layers=1, num_attention_heads=2,
                                                 image_size=28, patch_size=14)
        return transformers.Gemma3Config(text_config=tiny_config("gemma3").to_dict(),
                                         vision_config=vision.to_dict(), mm_tokens_per_image=4)
    if family == "phi3":
        # Fused qkv_proj and gate_up_proj, a window on every layer.
        return transformers.Phi3Config(**common, num_key_value_heads=2, sliding_window=5,
                                       pad_token_id=0, tie_word_embeddings=False)
    if family == "mixtral":
        # Four experts, two a token, weights renormalised and kept in fp32.
        return transformers.MixtralConfig(**common, num_key_value_heads=2, num_local_experts=4,
                                          num_experts_per_tok=2, sliding_window=None,
                                          tie_word_embeddings=False)
    if family == "qwen3_moe":
        # Experts narrower than the dense width, q/k norms, top-k weights
        # neither renormalised nor kept in fp32 (norm_topk_prob false).
        return transformers.Qwen3MoeConfig(**common, num_key_value_heads=2, head_dim=12,
                                           num_experts=4, num_experts_per_tok=2,
                                           moe_intermediate_size=24, norm_topk_prob=False,
                                           tie_word_embeddings=True)
    if family == "phi3-longrope":
        # Phi-4-mini's shape: three quarters of each head rotate, LongRoPE
        # with an original length the test's 12 tokens pass (long factors).
        rope = {"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
                "short_factor": [1.0, 1.5, 2.0], "long_factor": [1.5, 3.0, 6.0],
                "original_max_position_embeddings": 8}
        return transformers.Phi3Config(**common, num_key_value_heads=2, pad_token_id=0,
                                       original_max_position_embeddings=8,
                                       tie_word_embeddings=True, rope_parameters=rope)
    raise ReferenceError(f"unknown family {family!r}")


def randomize(model, seed):
    """Every weight away from its default (biases and norms are 0 and 1 after
    transformers' init, which would leave their handling untested)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if name.endswith("norm.weight"):
                parameter.copy_(1.0 + 0.2 * noise)
            elif name.endswith(".gate.weight"):
                # A router that decides: at a near tie between a token's k-th
                # and next expert, a rounding alone picks another. Still far
                # from saturation, so its gradients are tested.
                parameter.copy_(0.6 * noise)
            else:
                parameter.copy_(0.15 * noise)


def make_models(args):
    for family in args.families.split(","):
        nested = family.endswith(NESTED_SUFFIX)
        torch.manual_seed(args.seed)
        config = tiny_config(family[:-len(NESTED_SUFFIX)] if nested else family)
        model = transformers.AutoModelForCausalLM.from_config(config)
        randomize(model, args.seed)
        folder = os.path.join(args.out, family)
        model.save_pretrained(folder, safe_serialization=True)
        if nested:
            store_nested(os.path.join(folder, "model.safetensors"))


def store_nested(path):
    """The same tensors under the names transformers 4.52 to 4.57 stored."""
    tensors = load_file(path)
    renamed = {}
    for name, tensor in tensors.items():
        for stored, nested in NESTED_LAYOUT:
            if name.startswith(stored):
                name = nested + name[len(stored):]
                break
        renamed[name] = tensor
    save_file(renamed, path, metadata={"format": "pt"})


def load_model(folder, dtype, attention="eager"):
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        folder, local_files_only=True, output_loading_info=True, dtype=DTYPES[dtype],
        attn_implementation=attention)
    problems = {key: value for key, value in info.items() if value}
    if problems:
        raise ReferenceError(f"{folder}: transformers reports {problems}")
    return model


def peft_name(name):
    """Our (and the adapter file's) name of a peft parameter."""
    return name.replace(".default.", ".")


def check_adapter_keys(model, folder):
    """Every tensor of the file is a LoRA parameter of the model and back."""
    stored = set(load_file(os.path.join(folder, "adapter_model.safetensors")))
    loaded = {peft_name(name) for name, _ in model.named_parameters() if ".lora_" in name}
    if stored != loaded:
        raise ReferenceError(f"{folder}: in the file only: {sorted(stored - loaded)}; "
                             f"in the model only: {sorted(loaded - stored)}")


def with_adapter(model, folder):
    with warnings.catch_warnings():
        # peft's own warnings (missing adapter keys, ...), not transformers'
        # deprecation notices that peft happens to trigger.
        warnings.filterwarnings("error", module=r"peft(\.|$)")
        warnings.filterwarnings("error", message=r".*(missing|unexpected).*keys")
        model = peft.PeftModel.from_pretrained(model, folder)
    check_adapter_keys(model, folder)
    return model


def outputs(model, batch, suffix):
    model.eval()
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], labels=batch["labels"])
    return {"logits" + suffix: out.logits.float().contiguous(),
            "loss" + suffix: out.loss.float().reshape(1)}


def fused_attention_of(folder):
    """transformers' counterpart of our fused attention: sdpa, or eager for
    a model without an sdpa path (Gemma 2's softcapped scores; our trainer
    computes those as plain attention too)."""
    config = transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    model_class = transformers.AutoModelForCausalLM._model_mapping[type(config)]
    return "sdpa" if model_class._supports_sdpa else "eager"


def forward(args):
    """Logits and loss per dtype and attention ("logits.float32.sdpa"):
    eager is the counterpart of our plain attention, sdpa of our fused one."""
    batch = load_file(args.inputs)
    result = {}
    for dtype in args.dtypes.split(","):
        for name, attention in (("eager", "eager"), ("sdpa", fused_attention_of(args.model))):
            model = load_model(args.model, dtype, attention)
            if args.adapter:
                model = with_adapter(model, args.adapter)
            result.update(outputs(model, batch, f".{dtype}.{name}"))
    save_file(result, args.out)


def peft_lora(model, seed, experts=None):
    """peft's LoRA on every projection, B drawn away from zero (peft starts it
    at zero, and the adapter would do nothing); `experts` (a key of
    EXPERT_PARAMETERS): on the experts' weights too."""
    fused = any(name.endswith(".qkv_proj") for name, _ in model.named_modules())
    targets = FUSED_LORA_TARGETS if fused else LORA_TARGETS
    if model.config.model_type in MOE_TYPES:
        targets = ATTENTION_LORA_TARGETS
    if model.config.model_type in MULTIMODAL_TYPES:
        # The language model's projections alone: a list of names would
        # adapt the vision tower's q_proj, k_proj and v_proj too.
        targets = re.escape(LANGUAGE_MODEL_PREFIX) + r".*\.(" + "|".join(targets) + ")"
    config = peft.LoraConfig(r=4, lora_alpha=8.0, lora_dropout=0.0, target_modules=targets,
                             target_parameters=EXPERT_PARAMETERS[experts] if experts else None,
                             task_type="CAUSAL_LM")
    torch.manual_seed(seed)
    model = peft.get_peft_model(model, config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".lora_B." in name:
                parameter.normal_(0.0, 0.1)
    return model


def make_adapter(args):
    """A peft adapter saved to --out, and its logits on --inputs."""
    model = peft_lora(load_model(args.model, "float32"), args.seed, args.expert_lora)
    model.save_pretrained(args.out, safe_serialization=True)
    save_file(outputs(model, load_file(args.inputs), ""), args.logits)


def decays(name, parameter):
    """Our trainer's rule (and Hugging Face Trainer's): no decay on 1-D tensors."""
    return parameter.dim() >= 2


def train_step(args):
    model = load_model(args.model, "float32")
    if args.make_adapter:
        model = peft_lora(model, args.seed, args.expert_lora)
        model.save_pretrained(args.make_adapter, safe_serialization=True)
    model.train()
    if model.config.model_type in MULTIMODAL_TYPES:
        # Our trainer trains the language model alone; the tower stays.
        for name, parameter in model.named_parameters():
            if not name.removeprefix(PEFT_PREFIX).startswith(LANGUAGE_MODEL_PREFIX):
                parameter.requires_grad_(False)
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if decays(n, p)], "weight_decay": args.weight_decay},
              {"params": [p for n, p in named if not decays(n, p)], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=args.lr, betas=(args.beta1, args.beta2),
                                  eps=args.eps)
    batch = load_file(args.inputs)
    result = model(input_ids=batch["input_ids"], labels=batch["labels"],
                   attention_mask=batch.get("attention_mask"))
    result.loss.backward()
    out = {"loss": result.loss.detach().float().reshape(1)}
    if getattr(result, "aux_loss", None) is not None:
        out["aux_loss"] = result.aux_loss.detach().float().reshape(1)
    model_type = model.config.model_type
    nested = any(".experts.base_layer.lora_" in name for name, _ in named)
    experts = EXPERT_PARAMETERS[args.expert_lora] if args.expert_lora else []
    for name, parameter in named:
        for ours, grad in as_stored(our_name(name, nested, experts), parameter.grad, model_type):
            out["grad." + ours] = grad.detach().clone().contiguous()
    optimizer.step()
    for name, parameter in named:
        for ours, value in as_stored(our_name(name, nested, experts), parameter, model_type):
            out["param." + ours] = value.detach().clone().contiguous()
    save_file(out, args.out)


def our_name(name, nested=False, experts=()):
    """Our trainer's name of a peft parameter. Its LoRA on the experts'
    weights is a ParamWrapper around the experts module, gate_up_proj's
    inside down_proj's where both are adapted ("experts.base_layer.lora_A");
    ours is "expert_lora.<weight>.lora_A" beside the experts."""
    name = peft_name(name)
    name = name[len(PEFT_PREFIX):] if name.startswith(PEFT_PREFIX) else name
    if name.startswith(LANGUAGE_MODEL_PREFIX):
        name = "model." + name[len(LANGUAGE_MODEL_PREFIX):]
    match = re.fullmatch(r"(model\.layers\.\d+\.mlp)\.experts\.(base_layer\.)?(lora_[AB]\.weight)",
                         name)
    if not match:
        return name
    block, inner, matrix = match.groups()
    if nested:
        weight = "gate_up_proj" if inner else "down_proj"
    else:
        weight = experts[0].rpartition(".")[2]
    return f"{block}.expert_lora.{weight}.{matrix}"


def as_stored(name, tensor, model_type):
    """(name, tensor) as the checkpoint stores it, and our trainer names it.
    transformers 5 holds a mixture of experts' weights as [experts, ...]
    tensors under mlp. (gate and up rows fused, gate first); the files hold
    one matrix per expert (Mixtral under block_sparse_moe, w1/w3/w2)."""
    match = re.fullmatch(r"(model\.layers\.\d+)\.mlp\.(.+)", name)
    if model_type not in MOE_TYPES or not match:
        return [(name, tensor)]
    layer, rest = match.groups()
    mixtral = model_type == "mixtral"
    block = f"{layer}.{'block_sparse_moe' if mixtral else 'mlp'}"
    if rest.startswith("expert_lora."):
        return [(f"{block}.{rest}", tensor)]
    gate, up, down = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    if rest == "experts.gate_up_proj":
        half = tensor.shape[1] // 2
        return [(f"{block}.experts.{e}.{part}.weight", rows)
                for e in range(tensor.shape[0])
                for part, rows in ((gate, tensor[e, :half]), (up, tensor[e, half:]))]
    if rest == "experts.down_proj":
        return [(f"{block}.experts.{e}.{down}.weight", tensor[e]) for e in range(tensor.shape[0])]
    return [(f"{block}.{rest}", tensor)]


def parser():
    top = argparse.ArgumentParser(description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make-models", help="random-initialised tiny models, a folder each")
    p.add_argument("--families", required=True, help="comma-separated: llama2,llama3,...")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(run=make_models)
    p = sub.add_parser("forward", help="logits and loss of a model (and adapter) on a batch")
    p.add_argument("--model", required=True)
    p.add_argument("--adapter")
    p.add_argument("--dtypes", default="float32", help="comma-separated: float32,bfloat16")
    p.add_argument("--inputs", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=forward)
    p = sub.add_parser("make-adapter", help="a peft LoRA adapter with non-zero B, and its logits")
    p.add_argument("--model", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inputs", required=True)
    p.add_argument("--logits", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--expert-lora", choices=sorted(EXPERT_PARAMETERS),
                   help="LoRA on these expert weights too (peft's target_parameters)")
    p.set_defaults(run=make_adapter)
    p = sub.add_parser("train-step", help="one AdamW step: loss, gradients, updated weights")
    p.add_argument("--model", required=True)
    p.add_argument("--make-adapter", help="train a new peft adapter (saved here) instead")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inputs", required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--weight-decay", type=float, required=True)
    p.add_argument("--beta1", type=float, required=True)
    p.add_argument("--beta2", type=float, required=True)
    p.add_argument("--eps", type=float, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--expert-lora", choices=sorted(EXPERT_PARAMETERS),
                   help="with --make-adapter: LoRA on these expert weights too")
    p.set_defaults(run=train_step)
    return top


def run_command(argv):
    """Runs one subcommand; None when it succeeded, else what went wrong."""
    try:
        args = parser().parse_args(argv)
    except SystemExit:
        return f"hf_reference.py: bad arguments {argv}"
    try:
        args.run(args)
    except (ReferenceError, Warning) as problem:
        return f"hf_reference.py {args.command}: {problem}"
    return None


def serve():
    """Runs subcommands one per line of stdin (a JSON list of arguments) and
    answers each with one JSON line, {"problem": null} or the problem, so
    torch, transformers and peft are imported once for a whole test suite.
    Anything the libraries print goes to stderr: stdout carries the answers."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin:
        try:
            problem = run_command(json.loads(line))
        except Exception:  # a bug here must not end the suite's other checks
            problem = traceback.format_exc()
        answers.write(json.dumps({"problem": problem}) + "\n")
        answers.flush()


def main():
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(1)
    if sys.argv[1:] == ["serve"]:
        serve()
        return 0
    problem = run_command(sys.argv[1:])
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
