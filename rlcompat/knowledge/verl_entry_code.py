"""rlcompat/knowledge/data/verl_entry_code.toml: what a verl entry module's own code writes for the model it trains
(bf16 mixed precision, FlashAttention-2) per release, and which releases rlcompat knows have the module at all (their
knowledge files' `[entry_points] modules`); for RLC123."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files, verl_config


@dataclass(frozen=True)
class EntryCode:
    module: str
    release: str
    what: str
    replaced_by: str
    bf16: str  # file:line of the release where the trainer writes bf16 ("" where it does not)
    flash_attention_2: str


@lru_cache(maxsize=1)
def _rows() -> dict[tuple[str, str], EntryCode]:
    rows = {}
    for module in files.load("verl_entry_code.toml").get("module", ()):
        for row in module.get("release", ()):
            rows[(module["module"], row["release"])] = EntryCode(
                module["module"], row["release"], module["what"], module.get("replaced_by", ""),
                row.get("bf16", ""), row.get("flash_attention_2", ""))
    return rows


def modules() -> frozenset[str]:
    return frozenset(module for module, _ in _rows())


def code_of(module: str, release: str) -> EntryCode | None:
    return _rows().get((module, release))


def releases_with(module: str) -> tuple[str, ...]:
    """The releases rlcompat has knowledge of whose entry points include `module`, oldest first."""
    return tuple(v for v in verl_config.available_versions()
                 if module in verl_config.load_version(v).entry_modules)


def newest_code(module: str) -> EntryCode | None:
    """The row of the newest release that has `module` (what a command written for it was most likely run with)."""
    found = [code_of(module, v) for v in releases_with(module)]
    found = [row for row in found if row is not None]
    return found[-1] if found else None
