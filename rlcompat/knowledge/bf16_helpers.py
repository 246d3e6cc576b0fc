"""Other projects' functions that pick bf16 by `torch.cuda.is_bf16_supported()` (data/bf16_helpers.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files


@dataclass(frozen=True)
class Bf16Helper:
    qualname: str  # "litgpt.utils.get_default_supported_precision"
    returns: str
    proof: str


@lru_cache(maxsize=1)
def helpers() -> dict[str, Bf16Helper]:
    return {row["qualname"]: Bf16Helper(row["qualname"], row["returns"], row["proof"])
            for row in files.load("bf16_helpers.toml").get("helper", ())}
