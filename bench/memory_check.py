"""Measure what `rlcompat doctor --model-params` estimates, on a real GPU, and print both side by side.

Builds a randomly initialised Qwen2 model of one of the shapes in rlcompat/knowledge/data/model_shapes.toml (no download), then,
with torch's allocator statistics (torch.cuda.max_memory_allocated, CUDA context excluded on both sides):
  1. weights:            the fp32 model on the GPU (verl keeps fp32 master weights)
  2. trained state:      after one AdamW step: weights + gradients + moments
  3. actor update peak:  one micro-batch forward (fp32 logits, log-probs and entropy as verl computes them),
                         backward and AdamW step, gradient checkpointing on
  4. reference forward:  a second copy under no_grad, one micro-batch, log-probs only (above what is resident)
and compares each with rlcompat.doctor.memory.estimate() for the same shape, micro-batch and sequence length.

usage (on the device machine; torch and transformers come with its image):
    python3 bench/memory_check.py --shape Qwen2.5-0.5B --micro-batch 2 --seq-len 1024 --dtype float32
    python3 bench/memory_check.py --layers 2 --device cpu     # a smoke test of the code path, no figures
Exit status 1 when a measured figure is off the estimate by more than --tolerance (default 25%).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _import_rlcompat():
    """rlcompat from this checkout, installed or not (rules/ is the package rlcompat.rules once installed)."""
    sys.path.insert(0, str(ROOT))
    if importlib.util.find_spec("rlcompat.rules") is None:
        spec = importlib.util.spec_from_file_location("rlcompat.rules", ROOT / "rules" / "__init__.py",
                                                      submodule_search_locations=[str(ROOT / "rules")])
        module = importlib.util.module_from_spec(spec)
        sys.modules["rlcompat.rules"] = module
        spec.loader.exec_module(module)
    from rlcompat.doctor import memory

    return memory


def main() -> int:
    memory = _import_rlcompat()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="Qwen2.5-0.5B", choices=[s.name for s in memory.shapes()])
    ap.add_argument("--layers", type=int, help="fewer layers than the shape (a smaller model of the same width)")
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                    help="compute dtype (autocast); weights and optimizer stay fp32 as in verl")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tolerance", type=float, default=0.25)
    args = ap.parse_args()

    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    shape = next(s for s in memory.shapes() if s.name == args.shape)
    if args.layers:
        shape = replace(shape, layers=args.layers, name=f"{shape.name} ({args.layers} layers)")
    heads = max(1, shape.hidden // 64)
    config = Qwen2Config(hidden_size=shape.hidden, num_hidden_layers=shape.layers, intermediate_size=shape.intermediate,
                         vocab_size=shape.vocab, num_attention_heads=heads,
                         num_key_value_heads=max(1, shape.kv_dim // (shape.hidden // heads)),
                         tie_word_embeddings=shape.hidden < 2048, attn_implementation="sdpa")
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    dtype = getattr(torch, args.dtype)
    b, s = args.micro_batch, args.seq_len

    def allocated() -> int:
        return torch.cuda.memory_allocated(dev) if cuda else 0

    def peak_since_reset() -> int:
        return torch.cuda.max_memory_allocated(dev) if cuda else 0

    def reset() -> None:
        if cuda:
            torch.cuda.synchronize(dev)
            torch.cuda.reset_peak_memory_stats(dev)

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(dev, torch.float32)
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    params = sum(p.numel() for p in model.parameters())
    measured = {"weights": allocated()}
    optim = torch.optim.AdamW(model.parameters(), lr=1e-6)
    ids = torch.randint(0, shape.vocab, (b, s), device=dev)
    mask = torch.ones_like(ids)

    def logprobs_and_entropy(logits, labels):
        logits = logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        chosen = logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        entropy = -(logp.exp() * logp).sum(-1)
        return chosen, entropy

    def train_step():
        optim.zero_grad(set_to_none=True)
        # cache_enabled=False: autocast would otherwise keep a bf16 copy of every weight for the whole pass, which
        # verl's FSDP mixed precision (per-unit casts, freed after each unit) does not.
        with torch.autocast(dev.type, dtype=dtype, enabled=dtype != torch.float32, cache_enabled=False):
            out = model(input_ids=ids, attention_mask=mask)
            chosen, entropy = logprobs_and_entropy(out.logits[:, :-1], ids[:, 1:])
            loss = -(chosen.mean()) - 0.001 * entropy.mean()
        loss.backward()
        optim.step()

    train_step()  # the first step creates the AdamW moments
    measured["trained state"] = allocated()
    reset()
    train_step()
    measured["actor update peak"] = peak_since_reset()
    del optim
    model.zero_grad(set_to_none=True)

    ref = Qwen2ForCausalLM(config).to(dev, torch.float32).eval().requires_grad_(False)
    reset()
    before_ref_forward = allocated()
    with torch.no_grad(), torch.autocast(dev.type, dtype=dtype, enabled=dtype != torch.float32, cache_enabled=False):
        out = ref(input_ids=ids, attention_mask=mask)
        # verl's reference pass with remove-padding (its default): log-probs of the next tokens (labels rolled, not
        # the logits sliced, so no strided copy), no entropy.
        labels = torch.roll(ids, shifts=-1, dims=1)
        torch.log_softmax(out.logits.float(), dim=-1).gather(-1, labels.unsqueeze(-1))
    measured["reference forward peak (above resident)"] = peak_since_reset() - before_ref_forward

    est = memory.estimate(params, algo="grpo", dtype=args.dtype, gpus=1, seq_len=s, rollout="hf", use_ref=False,
                          plan=memory.Plan(micro_batch=b), shape=replace(shape, params=params))
    p = est.parts
    w = p["actor weights (fp32)"]
    estimated = {
        "weights": w,
        "trained state": w + p["actor gradients (fp32)"] + p["actor AdamW moments (fp32)"],
        "actor update peak": est.phases["actor update"] - memory.CUDA_CONTEXT,
        "reference forward peak (above resident)": memory.logits_bytes(b, s, shape.vocab, memory.DTYPE_BYTES[args.dtype],
                                                                        training=False),
    }
    print(f"{shape.name}: {params:,} parameters, micro-batch {b} x {s} tokens, compute {args.dtype}, on "
          f"{torch.cuda.get_device_name(dev) if cuda else 'cpu (no figures)'}, torch {torch.__version__}")
    print(f"{'':42} {'measured':>10} {'estimated':>10} {'ratio':>7}")
    worst = 0.0
    for key in measured:
        m, e = measured[key], estimated[key]
        ratio = m / e if e and cuda else float("nan")
        if cuda:
            worst = max(worst, abs(ratio - 1))
        print(f"{key:42} {m / 2**30:9.2f}G {e / 2**30:9.2f}G {ratio:7.2f}")
    out_dir = os.environ.get("OUT")
    if out_dir:
        Path(out_dir, "memory_check.json").write_text(json.dumps(
            {"shape": shape.name, "params": params, "micro_batch": b, "seq_len": s, "dtype": args.dtype,
             "device": torch.cuda.get_device_name(dev) if cuda else "cpu", "torch": torch.__version__,
             "measured_bytes": measured, "estimated_bytes": estimated}, indent=2))
    if cuda and worst > args.tolerance:
        print(f"off by {worst:.0%} (> {args.tolerance:.0%}): revisit the formula in rlcompat/doctor/memory.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
