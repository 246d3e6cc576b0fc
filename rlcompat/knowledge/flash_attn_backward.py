"""FlashAttention-2's backward for large head dims on cards with less shared memory than an A100
(rlcompat/knowledge/data/environment.toml `[flash_attn_backward_head_dim]`, source S70): the questions RLC209
(Python) and RLC210 (configs, scripts) ask of a model's shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlcompat.knowledge.environment import environment_facts
from rlcompat.knowledge.versions import release

if TYPE_CHECKING:
    from rlcompat.analysis.model_config import ModelShape


def _facts() -> dict:
    return environment_facts()["flash_attn_backward_head_dim"]


def applies_to(target) -> bool:
    """FlashAttention-2 runs on the card but its full head_dim-256 backward kernel does not fit (sm86, sm89, sm120)."""
    optin = target.fact("smem_per_block_optin")
    return bool(target.flash_attn_2) and isinstance(optin, int) and optin < _facts()["full_kernel_smem"]


def needed_release(head_dim: int) -> str:
    """The first flash-attn release whose backward runs this head_dim without dropout on a 99 KB card."""
    last = "0.0.0"
    for row in _facts()["refused"]:
        low, high = (int(x) for x in row["head_dim"].split("-"))
        if row["dropout"] == "any" and low <= head_dim <= high:
            last = max(last, row["versions"].split("-")[1], key=release)
    major, minor, patch = release(last)
    return f"{major}.{minor}.{patch + 1}"


@dataclass(frozen=True)
class BackwardHazard:
    message: str
    with_dropout: bool  # fails on every flash-attn release (an error, fixed by sdpa); else only on older ones


def backward_hazard(shape: ModelShape | None, target) -> BackwardHazard | None:
    if shape is None or not _facts()["above"] < shape.head_dim <= 256:
        return None
    where = f"head_dim {shape.head_dim} ({shape.head_dim_key} in {shape.config_path})"
    card = f"{target.name} ({target.fact('smem_per_block_optin') // 1024} KB of shared memory per block)"
    if shape.attention_dropout:
        return BackwardHazard(
            f"FlashAttention-2 backward with {where} and attention dropout {shape.attention_dropout:g} on {card}: "
            f"flash-attn up to 2.7.2 raises `FlashAttention backward for head dim > 192 ... requires A100/A800 or "
            f"H100/H800`, 2.7.3+ launches no backward kernel; use sdpa", True)
    release = needed_release(shape.head_dim)
    return BackwardHazard(
        f"FlashAttention-2 backward with {where} on {card}: flash-attn before {release} raises `FlashAttention "
        f"backward for head dim > 192 requires A100/A800 or H100/H800`; use flash-attn>={release} (with attention "
        f"dropout 0) or sdpa", False)
