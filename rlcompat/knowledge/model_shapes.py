"""rlcompat/knowledge/data/model_shapes.toml: the shapes of common model sizes that doctor's PPO memory estimate
assumes for a parameter count."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files


@dataclass(frozen=True)
class Shape:
    name: str
    params: int
    hidden: int
    layers: int
    intermediate: int
    vocab: int
    kv_dim: int


@lru_cache(maxsize=1)
def shapes() -> tuple[Shape, ...]:
    return tuple(Shape(**s) for s in files.load("model_shapes.toml")["shape"])
