"""Minimum compute capabilities (rules/capabilities.toml): the one table that rules/targets.toml's threshold
booleans, rules/environment.toml's package minimums and the rules share.

    min_capability("vllm").text      -> "7.5"
    runs("trtllm", target)           -> target.capability >= (8, 0)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from rlcompat._toml import load_toml_text


@dataclass(frozen=True)
class MinCapability:
    name: str
    capability: tuple[int, int]
    sources: tuple[str, ...]
    note: str
    target_fact: str | None  # the rules/targets.toml boolean this threshold decides, if any

    @property
    def text(self) -> str:
        return f"{self.capability[0]}.{self.capability[1]}"


@lru_cache(maxsize=1)
def table() -> dict[str, MinCapability]:
    data = load_toml_text(resources.files("rlcompat.rules").joinpath("capabilities.toml").read_text("utf-8"))
    out = {}
    for name, row in data["min_capability"].items():
        major, minor = (int(p) for p in row["capability"].split("."))
        out[name] = MinCapability(name, (major, minor), tuple(row["sources"]), row.get("note", ""),
                                  row.get("target_fact"))
    return out


def min_capability(name: str) -> MinCapability:
    """A row by name; an unknown name is a KeyError naming the file, so a typo fails in the first test that asks."""
    rows = table()
    if name not in rows:
        raise KeyError(f"{name!r} is not a row of rules/capabilities.toml [min_capability] ({', '.join(rows)})")
    return rows[name]


def runs(name: str, target) -> bool:
    """Whether `target` (anything with `.capability`) meets the named minimum."""
    return tuple(target.capability) >= min_capability(name).capability
