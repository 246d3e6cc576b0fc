"""rlcompat/knowledge/data/verl_packing.toml: verl releases older than the rule sets (0.2.x, 0.3.x) whose
remove-padding path keeps packed sequences apart only through FlashAttention-2, and the transformers release from
which SDPA and eager attention do so too; for RLC206."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files, versions


@dataclass(frozen=True)
class OldPacking:
    releases: tuple[str, str]  # [first, below)
    keys: tuple[str, ...]  # the remove-padding switches, per role
    ulysses: tuple[str, ...]  # the sequence-parallel sizes that need FlashAttention whatever transformers does
    proof: str


@lru_cache(maxsize=1)
def _table() -> dict:
    return files.load("verl_packing.toml")


@lru_cache(maxsize=1)
def rows() -> tuple[OldPacking, ...]:
    return tuple(OldPacking(tuple(r["releases"]), tuple(r["keys"]), tuple(r["ulysses"]), r["proof"])
                 for r in _table()["release"])


def old_packing(verl_version: str | None) -> OldPacking | None:
    """The row of a verl release (a fork's version, a pin) whose remove-padding needs FlashAttention-2; None for
    other releases and an unknown one."""
    if not verl_version or not versions.release(verl_version):
        return None
    return next((r for r in rows() if versions.version_in(verl_version, *r.releases)), None)


def packed_masks_from() -> str:
    """The first transformers release whose SDPA and eager masks keep packed sequences apart."""
    return _table()["packed_masks_from"]


def packed_masks_proof() -> str:
    return _table()["packed_masks_proof"]
