"""Other projects' trainer config classes whose `bf16` field defaults to True (data/bf16_default_configs.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files


@dataclass(frozen=True)
class Bf16DefaultConfig:
    qualname: str  # "verifiers.RLConfig"
    release: str  # "verifiers 0.1.7"
    proof: str


@lru_cache(maxsize=1)
def configs() -> dict[str, Bf16DefaultConfig]:
    """Each qualname a file may call such a class by -> its row."""
    out = {}
    for row in files.load("bf16_default_configs.toml").get("config", ()):
        if not row.get("proof") or not row.get("qualnames"):
            raise ValueError("rlcompat/knowledge/data/bf16_default_configs.toml: a [[config]] needs qualnames and proof")
        for qualname in row["qualnames"]:
            out[qualname] = Bf16DefaultConfig(qualname, row["release"], row["proof"])
    return out


def class_names() -> tuple[str, ...]:
    """The classes' own names (the last part of each qualname), what a call spells."""
    return tuple(sorted({q.rsplit(".", 1)[-1] for q in configs()}))
