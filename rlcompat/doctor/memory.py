"""Will PPO/GRPO for a model of N parameters fit on the card? A per-GPU memory estimate for verl's FSDP workers
and the settings that make it fit. The formula is documented in docs/doctor.md ("Memory check").

Per GPU, with P parameters sharded over G GPUs by FSDP (verl keeps fp32 master weights: model_dtype=fp32):
    trained model (actor, critic): weights 4P/G + gradients 4P/G + AdamW moments 8P/G
    reference model:               weights 4P/G (forward only)
    activations, one micro-batch b of s tokens, L layers, hidden h, vocabulary V, compute dtype of d bytes:
        one layer saves A = b*s*(8.5*h + 4*i)*d for backward (i the MLP width; measured with SDPA attention by
        bench/activation_bytes.py: eager attention adds the attention scores)
        gradient checkpointing on:  L*b*s*h*d (saved layer inputs) + A (one layer recomputed)
        off:                        L * A
        logits, actor update:       4 * b*s*V * 4 (fp32 logits, log-softmax, softmax for the entropy, gradient)
        logits, reference pass:     2 * b*s*V * 4 (fp32 logits, log-softmax)
        both, when d < 4:           + b*s*V*d (the lm_head's output before the fp32 upcast)
    optimizer step: torch's foreach AdamW (what verl builds) holds sqrt(v) for every parameter at once, 4P/G, after
        the backward pass has freed the activations: an update holds max(activations + logits, 4P/G)
    rollout: vLLM/SGLang take gpu_memory_utilization * card memory; rlcompat's hf rollout holds its server's own copy
        of the whole model, P*d (one replica per GPU, not sharded), a KV cache of 2*L*b*s*kv_dim*d and the logits of
        one step; it moves the copy to host memory while the trainer updates, so only the rollout phase holds it
A phase holds its own model whole plus what the others keep resident (an offloaded model keeps nothing):
    rollout, actor update, critic update, reference log-probs; peak = the largest phase + CUDA context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from rlcompat.knowledge.model_shapes import Shape, shapes

GIB = 2**30
CUDA_CONTEXT = int(0.6 * GIB)  # context + cuBLAS/cuDNN workspaces, outside torch's allocator statistics
USABLE = 0.95  # of the card's memory: the allocator fragments, and a full card thrashes
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


class MemoryInputError(ValueError):
    """A model size or option that cannot be read; the message says what to pass."""


def parse_params(text: str) -> int:
    """"0.5B", "1.5b", "7B", "350M", "494032768" -> a parameter count."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMbBtT]?)\s*", text or "")
    if not m:
        raise MemoryInputError(f"cannot read model size {text!r}: use a count like 0.5B, 1.5B, 7B or 350M")
    scale = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}[m.group(2).lower()]
    count = int(float(m.group(1)) * scale)
    if count <= 0:
        raise MemoryInputError(f"model size {text!r} must be positive")
    return count


def parse_bytes(text: str) -> int:
    """"24GiB", "24G", "16GB", "24" (GiB) -> bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(GiB|GB|G|MiB|MB|M)?\s*", text or "", re.IGNORECASE)
    if not m:
        raise MemoryInputError(f"cannot read GPU memory {text!r}: use e.g. 24GiB or 16GB")
    unit = (m.group(2) or "GiB").lower()
    scale = {"gib": GIB, "g": GIB, "gb": 10**9, "mib": 2**20, "m": 2**20, "mb": 10**6}[unit]
    return int(float(m.group(1)) * scale)


def nearest_shape(params: int) -> Shape:
    """The preset closest in parameter count (by ratio), with its count replaced by the one asked for."""
    best = min(shapes(), key=lambda s: abs(s.params / params - 1) + abs(params / s.params - 1))
    return replace(best, params=params)


@dataclass(frozen=True)
class Plan:
    """The verl settings the estimate assumes; `suggest` changes them one at a time."""

    micro_batch: int = 4  # ppo_micro_batch_size_per_gpu (and log_prob micro-batch)
    gradient_checkpointing: bool = True  # verl's default
    actor_param_offload: bool = False
    actor_optimizer_offload: bool = False
    critic_param_offload: bool = False
    critic_optimizer_offload: bool = False
    ref_param_offload: bool = False
    rollout_memory_fraction: float = 0.5  # actor_rollout_ref.rollout.gpu_memory_utilization (verl's default)

    def settings(self, algo: str, rollout: str) -> list[tuple[str, str, str]]:
        """(setting id, role, value) for the verl settings that realise this plan: ids of rlcompat/knowledge/data/verl/<version>.toml,
        which doctor/verl_keys.py turns into the installed verl's keys (the compute dtypes are added there)."""
        mb = str(self.micro_batch)
        out = [("rollout-name", "actor", rollout), ("ppo-micro-batch", "actor", mb),
               ("log-prob-micro-batch", "ref", mb), ("log-prob-micro-batch", "rollout", mb)]
        if algo == "ppo":
            out.append(("ppo-micro-batch", "critic", mb))
        if not self.gradient_checkpointing:
            out.append(("gradient-checkpointing", "actor", "False"))
        flags = [
            (self.actor_param_offload, "param-offload", "actor"),
            (self.actor_optimizer_offload, "optimizer-offload", "actor"),
            (self.ref_param_offload, "param-offload", "ref"),
            (self.critic_param_offload and algo == "ppo", "param-offload", "critic"),
            (self.critic_optimizer_offload and algo == "ppo", "optimizer-offload", "critic"),
        ]
        out += [(setting_id, role, "True") for on, setting_id, role in flags if on]
        if rollout in ("vllm", "sglang"):
            out.append(("rollout-memory-fraction", "actor", f"{self.rollout_memory_fraction:.2f}"))
        return out


@dataclass
class Estimate:
    shape: Shape
    algo: str
    dtype: str
    rollout: str
    gpus: int
    seq_len: int
    card_bytes: int | None
    plan: Plan
    parts: dict[str, int] = field(default_factory=dict)  # component -> bytes per GPU
    phases: dict[str, int] = field(default_factory=dict)  # phase -> bytes per GPU, context included

    @property
    def peak(self) -> int:
        return max(self.phases.values())

    @property
    def budget(self) -> int | None:
        return int(self.card_bytes * USABLE) if self.card_bytes else None

    @property
    def fits(self) -> bool | None:
        return None if self.budget is None else self.peak <= self.budget


def logits_bytes(micro_batch: int, seq_len: int, vocab: int, compute_bytes: int, *, training: bool) -> int:
    """Vocabulary-sized tensors alive at once for one micro-batch (measured by bench/memory_check.py).

    Training: fp32 logits, their log-softmax, the softmax for the entropy and the gradient; the reference pass
    (forward only, no entropy): fp32 logits and log-softmax. Below fp32 the lm_head's output in the compute dtype
    is alive beside its fp32 upcast.
    """
    one = micro_batch * seq_len * vocab
    return (4 if training else 2) * one * 4 + (one * compute_bytes if compute_bytes < 4 else 0)


def estimate(params: int, *, algo: str = "ppo", dtype: str = "float32", gpus: int = 1, seq_len: int = 1024,
             rollout: str = "hf", card_bytes: int | None = None, plan: Plan = Plan(), use_ref: bool = True,
             shape: Shape | None = None) -> Estimate:
    if algo not in ("ppo", "grpo"):
        raise MemoryInputError(f"unknown --algo {algo!r}: use ppo (actor + critic) or grpo (no critic)")
    if rollout not in ("hf", "vllm", "sglang"):
        raise MemoryInputError(f"unknown rollout engine {rollout!r}: use hf, vllm or sglang")
    shape = shape or nearest_shape(params)
    d, P, G = DTYPE_BYTES[dtype], params, max(1, gpus)
    b, s, h, L = plan.micro_batch, seq_len, shape.hidden, shape.layers
    weights, grads, moments = 4 * P // G, 4 * P // G, 8 * P // G
    layer = (17 * h + 8 * shape.intermediate) * b * s * d // 2  # one layer, saved for backward (bench/activation_bytes.py)
    activations = (L * b * s * h * d + layer) if plan.gradient_checkpointing else L * layer
    logits = logits_bytes(b, s, shape.vocab, d, training=True)
    parts = {
        "actor weights (fp32)": weights,
        "actor gradients (fp32)": grads,
        "actor AdamW moments (fp32)": moments,
        "actor activations (one micro-batch)": activations,
        "logits (one micro-batch)": logits,
    }
    if algo == "ppo":
        parts["critic weights+gradients+AdamW (fp32)"] = weights + grads + moments
        parts["critic activations (one micro-batch)"] = activations
    if use_ref:
        parts["reference weights (fp32)"] = weights
    if rollout == "hf":
        parts["rollout server weights (whole model)"] = P * d
        parts["rollout KV cache (HF generate)"] = 2 * L * b * s * shape.kv_dim * d
    else:
        parts[f"rollout ({rollout}, gpu_memory_utilization)"] = int(plan.rollout_memory_fraction * (card_bytes or 0))

    actor_all = weights + grads + moments
    critic_all = actor_all if algo == "ppo" else 0
    ref_all = weights if use_ref else 0
    actor_res = (0 if plan.actor_param_offload else weights + grads) + (0 if plan.actor_optimizer_offload else moments)
    critic_res = 0 if algo != "ppo" else (0 if plan.critic_param_offload else weights + grads) + (
        0 if plan.critic_optimizer_offload else moments)
    ref_res = 0 if (not use_ref or plan.ref_param_offload) else weights
    rollout_mem = sum(v for k, v in parts.items() if k.startswith("rollout"))
    adamw_step = 4 * P // G  # sqrt of AdamW's second moment for every parameter (measured: bench/memory_check.py)
    phases = {
        "rollout": actor_res + critic_res + ref_res + rollout_mem + (b * shape.vocab * 4 if rollout == "hf" else 0),
        "actor update": actor_all + max(activations + logits, adamw_step) + critic_res + ref_res,
    }
    if algo == "ppo":
        phases["critic update"] = critic_all + max(activations, adamw_step) + actor_res + ref_res
    if use_ref:
        phases["reference log-probs"] = ref_all + logits_bytes(b, s, shape.vocab, d, training=False) + actor_res + critic_res
    phases = {k: v + CUDA_CONTEXT for k, v in phases.items()}
    return Estimate(shape, algo, dtype, rollout, G, s, card_bytes, plan, parts, phases)


# Changes tried in this order until the estimate fits: cheap ones (no CPU traffic) first.
_STEPS = (
    ("ref_param_offload", True),
    ("critic_optimizer_offload", True),
    ("critic_param_offload", True),
    ("actor_optimizer_offload", True),
    ("actor_param_offload", True),
)


def suggest(params: int, **kwargs) -> tuple[Estimate, list[str]]:
    """The first plan (in the order micro-batch, rollout fraction, offloads) that fits, and what changed."""
    first = estimate(params, **kwargs)
    if first.fits is None or first.fits:
        return first, []
    plan, notes, est = first.plan, [], first
    while est.plan.micro_batch > 1 and not est.fits:
        plan = replace(plan, micro_batch=max(1, plan.micro_batch // 2))
        est = estimate(params, **{**kwargs, "plan": plan})
    if plan.micro_batch != first.plan.micro_batch:
        notes.append(f"micro-batch per GPU {first.plan.micro_batch} -> {plan.micro_batch}")
    for attr, value in _STEPS:
        if est.fits:
            break
        if kwargs.get("algo", "ppo") != "ppo" and attr.startswith("critic"):
            continue
        if not kwargs.get("use_ref", True) and attr.startswith("ref"):
            continue
        plan = replace(plan, **{attr: value})
        est = estimate(params, **{**kwargs, "plan": plan})
        notes.append(attr.replace("_", " "))
    if not est.fits and kwargs.get("rollout", "hf") in ("vllm", "sglang"):
        # Shrink the rollout engine's share to what the rollout phase leaves, keeping room for its weights.
        room = est.budget - (est.phases["rollout"] - est.parts[next(k for k in est.parts if k.startswith("rollout"))])
        floor = (2 * params + GIB) / est.card_bytes
        fraction = round(max(floor, room / est.card_bytes) - 0.005, 2)
        if 0 < fraction < plan.rollout_memory_fraction:
            plan = replace(plan, rollout_memory_fraction=fraction)
            est = estimate(params, **{**kwargs, "plan": plan})
            notes.append(f"rollout gpu_memory_utilization -> {fraction:.2f}")
    return est, notes


def gpus_needed(params: int, **kwargs) -> int | None:
    """The fewest GPUs of this size (FSDP shards weights, gradients and moments over them) on which the most
    frugal plan fits; None beyond 64."""
    frugal = Plan(micro_batch=1, **{attr: value for attr, value in _STEPS})
    for gpus in (1, 2, 4, 8, 16, 32, 64):
        kw = {**kwargs, "gpus": gpus, "plan": frugal}
        if estimate(params, **kw).fits:
            return gpus
    return None
