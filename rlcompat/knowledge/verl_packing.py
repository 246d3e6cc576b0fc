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
    fork_code: str = ""  # a file of the fork's package that must hold `fork_marker` for the row to apply
    fork_marker: str = ""


@lru_cache(maxsize=1)
def _table() -> dict:
    return files.load("verl_packing.toml")


@lru_cache(maxsize=1)
def rows() -> tuple[OldPacking, ...]:
    return tuple(OldPacking(tuple(r["releases"]), tuple(r["keys"]), tuple(r["ulysses"]), r["proof"],
                            r.get("fork_code", ""), r.get("fork_marker", "")) for r in _table()["release"])


def old_packing(verl_version: str | None, fork_text=None) -> OldPacking | None:
    """The row of a verl release (a fork's version, a pin) whose remove-padding needs FlashAttention-2; None for
    other releases and an unknown one. A row with `fork_code` applies only where `fork_text(fork_code)` (the text of
    that file of the fork's package, None where there is none) holds its marker."""
    if not verl_version or not versions.release(verl_version):
        return None
    row = next((r for r in rows() if versions.version_in(verl_version, *r.releases)), None)
    if row is not None and row.fork_code:
        text = fork_text(row.fork_code) if fork_text is not None else None
        return row if text is not None and row.fork_marker in text else None
    return row


def packed_masks_from() -> str:
    """The first transformers release whose SDPA and eager masks keep packed sequences apart."""
    return _table()["packed_masks_from"]


def packed_masks_proof() -> str:
    return _table()["packed_masks_proof"]


def transformers_newest() -> str:
    """transformers' newest release on PyPI when the table was read: what a requirement without an upper bound installs."""
    return _table()["transformers_newest"]
