"""Which dtype a setting should hold on a target, by the role the setting plays (the precision policy).

Roles: `weights` (the dtype training weights are stored and updated in), `compute` (the mixed-precision compute
dtype of training), `inference` (a rollout or serving engine's dtype). The policy: Pascal and older (no fast fp16)
fp32 everywhere; sm70/sm75 keep fp32 weights and compute in fp16 through mixed precision, and serve in fp16; bf16
where it is native. This is the one place framework knowledge asks; rules/precision.toml (issue 17) is meant to
become its data.
"""

from __future__ import annotations

from rlcompat.model import FixSafety


def dtype_for(role: str, target) -> tuple[str, FixSafety]:
    """("fp32" | "fp16" | "bf16", safety of moving a bf16 setting there) for `role` on `target`."""
    if target.bf16_native:
        return "bf16", FixSafety.SAFE
    if role == "weights":
        return "fp32", FixSafety.SAFE
    if target.training_dtype == "float16":  # fp16 tensor cores: compute and serve in fp16, a smaller range than bf16
        return "fp16", FixSafety.UNSAFE
    return "fp32", FixSafety.SAFE
