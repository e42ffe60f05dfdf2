"""The peak a Hugging Face fine-tune allocates in one training step, measured.

Builds transformers' LlamaForCausalLM from a config.json, prepares it as the
Hugging Face Trainer with peft (and TRL's SFTTrainer) prepares it for the
method (QLoRA: bitsandbytes NF4 through BitsAndBytesConfig, then peft's
prepare_model_for_kbit_training; LoRA and QLoRA: get_peft_model; a QLoRA
that FSDP would shard as TRL prepares it: its 4-bit codes stored in the
model's dtype, no prepare_model_for_kbit_training, adapters in the model's
dtype, autocast_adapter_dtype=False), runs one
step so that the optimizer's states exist, then profiles a second step
(forward, transformers' own loss, backward, AdamW) with PyTorch's profiler
(profile_memory) on the CPU. The step's peak is the bytes alive before it
(every tensor storage the process holds, found through the garbage
collector) plus the most that the step allocated and had not yet freed:
torch.cuda.max_memory_allocated's figure, for the CPU.

With an evaluation batch, it then profiles the Trainer's evaluation of that
many rows the same way: its prediction_step, a forward with labels under
no_grad (and the step's autocast), the model in eval mode.

usage: hf_step_peak.py CONFIG_DIR CASE...
CASE: method:precision:checkpointing:batch:seq[:eval_batch], e.g.
qlora:bf16-mixed:ckpt:2:256:8 (method full|lora|qlora|qlora-sharded; precision as the
planner spells it: fp32, bf16 (the model loaded in bf16) or bf16-mixed
(loaded in bf16, the step under bf16 autocast, as the Trainer's bf16=True
runs it); ckpt|nockpt).
Prints one JSON object: {CASE: {"peak": bytes, "before": bytes[,
"eval_peak": bytes, "eval_before": bytes]}, ...}.
"""

import contextlib
import gc
import json
import sys
import tempfile

import torch
from transformers import AutoConfig, BitsAndBytesConfig, LlamaForCausalLM

from profiled_peak import most_allocated_during

LORA_RANK = 8
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def load_model(folder, method, dtype):
    if not method.startswith("qlora"):
        return LlamaForCausalLM.from_pretrained(folder, dtype=dtype)
    # FSDP can shard only 4-bit codes stored in the model's dtype
    # (bnb_4bit_quant_storage), as the FSDP-QLoRA recipes load them.
    storage = {"bnb_4bit_quant_storage": dtype} if method == "qlora-sharded" else {}
    quantization = BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype,
        bnb_4bit_use_double_quant=True, **storage)
    return LlamaForCausalLM.from_pretrained(
        folder, dtype=dtype, quantization_config=quantization, device_map="cpu")


def prepare(model, method, checkpointing):
    # As TRL's SFTTrainer._prepare_peft_model does: prepare_model_for_kbit_training
    # for a 4-bit model unless it is sharded, whose adapters peft then keeps
    # in the model's dtype (autocast_adapter_dtype=False).
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    if method == "qlora":
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=checkpointing)
    elif checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if method == "full":
        return model
    if checkpointing:
        model.enable_input_require_grads()
    config = LoraConfig(r=LORA_RANK, lora_alpha=2 * LORA_RANK, lora_dropout=0.0,
                        target_modules=LORA_TARGETS, task_type="CAUSAL_LM")
    return get_peft_model(model, config, autocast_adapter_dtype=method != "qlora-sharded")


def live_storage_bytes():
    gc.collect()
    seen = {}
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor) and obj.device.type == "cpu":
                storage = obj.untyped_storage()
                seen[storage.data_ptr()] = storage.nbytes()
        except Exception:  # noqa: BLE001 - objects gc finds may be half-made
            pass
    return sum(seen.values())


def evaluation_peak(model, ids, autocast):
    """The Trainer's evaluate loop: prediction_step's forward with labels
    under no_grad, keeping the loss and (prediction_loss_only) nothing else."""
    model.eval()

    def predict():
        with torch.no_grad():
            with torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext():
                outputs = model(input_ids=ids, labels=ids)
            loss = outputs.loss.detach()
            del outputs, loss

    before = live_storage_bytes()
    peak = most_allocated_during(predict)
    model.train()
    return {"eval_peak": before + peak, "eval_before": before}


def measure(folder, case):
    method, precision, checkpointing, batch, seq, *evaluation = case.split(":")
    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    autocast = precision == "bf16-mixed"
    torch.manual_seed(0)
    model = prepare(load_model(folder, method, dtype), method, checkpointing == "ckpt")
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    # PyTorch's fused AdamW kernel, as the Trainer's default optim (adamw_torch_fused).
    optimizer = torch.optim.AdamW(trainable, lr=1e-5, fused=True)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (int(batch), int(seq)))

    def step():
        # The Trainer's compute_loss keeps the loss and drops the output.
        with torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext():
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        del loss

    step()
    before = live_storage_bytes()
    peak = most_allocated_during(step)
    result = {"peak": before + peak, "before": before}
    if evaluation:
        eval_ids = torch.randint(0, vocab, (int(evaluation[0]), int(seq)))
        result.update(evaluation_peak(model, eval_ids, autocast))
    return result


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        # Random weights for the config, stored as a checkpoint so that
        # from_pretrained (and bitsandbytes' quantisation) loads them.
        torch.manual_seed(0)
        LlamaForCausalLM(AutoConfig.from_pretrained(sys.argv[1])).save_pretrained(folder)
        print(json.dumps({case: measure(folder, case) for case in sys.argv[2:]}))


if __name__ == "__main__":
    main()
