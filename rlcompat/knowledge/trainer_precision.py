"""rlcompat/knowledge/data/trainer_precision.toml: libraries whose patched trainers take the mixed precision from the
model's dtype and load float16 below a capability (Unsloth), per release read; for RLC126."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files, versions


@dataclass(frozen=True)
class FollowsModel:
    library: str
    label: str
    release: str
    float16_below: tuple[int, ...]
    proof: str
    remedy: str
    sources: tuple[str, ...]
    probe: str = ""  # the release's bf16 probe (False below float16_below), as imported
    probe_proof: str = ""


@lru_cache(maxsize=1)
def follows_model() -> tuple[FollowsModel, ...]:
    return tuple(FollowsModel(r["library"], r["label"], r["release"], versions.release(r["float16_below"]), r["proof"],
                              r["remedy"], tuple(r["sources"]), r.get("probe", ""), r.get("probe_proof", ""))
                 for r in files.load("trainer_precision.toml").get("follows_model", ()))


def loads_float16(library: str, release: str | None, capability: tuple[int, int]) -> FollowsModel | None:
    """The row of `library` at exactly `release` where that release loads float16 on a card of `capability`."""
    return next((r for r in follows_model() if r.library == library and r.release == release
                 and tuple(capability) < r.float16_below), None)
