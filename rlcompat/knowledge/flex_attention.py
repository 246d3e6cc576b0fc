"""rlcompat/knowledge/data/flex_attention.toml: torch 2.13's default flex_attention forward block sizes per capability,
dtype and head_dim (RLC357)."""

from __future__ import annotations

from functools import lru_cache

from rlcompat.knowledge import files


@lru_cache(maxsize=1)
def table() -> dict:
    return files.load("flex_attention.toml")


def forward_config(capability: tuple[int, int], dtype: str, head_dim: int) -> list[int]:
    """torch 2.13's default forward [BLOCK_M, BLOCK_N, num_stages, num_warps] on a capability below 9.0."""
    fwd = table()["forward"]
    if head_dim > 256:
        return fwd["above_256_float32" if dtype == "float32" else "above_256_half"]
    if capability >= (8, 0):
        return fwd["sm8x"].get(f"{dtype}-{head_dim}", fwd["generic"])
    return fwd["generic"]
