"""Minimum compute capabilities (rlcompat/knowledge/data/capabilities.toml): the one table that rlcompat/knowledge/data/targets.toml's threshold
booleans, rlcompat/knowledge/data/environment.toml's package minimums and the rules share.

    min_capability("vllm").text             -> "7.5"  (the current release's)
    min_capability("vllm", "0.19.1").text   -> "7.0"  (a minimum that changed between releases: per release)
    runs("trtllm", target)                  -> target.capability >= (8, 0)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files
from rlcompat.knowledge.versions import capability, capability_text, release


@dataclass(frozen=True)
class Earlier:
    """An older minimum of a component, held up to and including release `through`."""
    through: str
    capability: tuple[int, int]
    note: str

    @property
    def text(self) -> str:
        return capability_text(self.capability)


@dataclass(frozen=True)
class MinCapability:
    name: str
    capability: tuple[int, int]
    sources: tuple[str, ...]
    note: str
    target_fact: str | None  # the rlcompat/knowledge/data/targets.toml boolean this threshold decides, if any
    since: str = ""  # the first release this minimum holds for, where it changed between releases
    earlier: tuple[Earlier, ...] = ()  # older minimums, oldest first
    product: str = ""  # the component's name in messages

    @property
    def text(self) -> str:
        return capability_text(self.capability)

    def by_release(self) -> str:
        """The minimum per release, for messages: "vLLM needs compute capability 7.5+ from 0.20.0 (7.0+ up to
        0.19.1)"; only the number where it never changed."""
        needs = f"{self.product or self.name} needs compute capability {self.text}+"
        if not self.since:
            return needs
        before = "; ".join(f"{e.text}+ up to {e.through}" for e in reversed(self.earlier))
        return f"{needs} from {self.since} ({before})"


@lru_cache(maxsize=1)
def table() -> dict[str, MinCapability]:
    data = files.load("capabilities.toml")
    out = {}
    for name, row in data["min_capability"].items():
        earlier = tuple(sorted((Earlier(e["through"], capability(e["capability"]), e.get("note", ""))
                                for e in row.get("earlier", ())), key=lambda e: release(e.through)))
        if earlier and not row.get("since"):
            raise ValueError(f"rlcompat/knowledge/data/capabilities.toml {name}: `earlier` minimums need the `since` of the current one")
        out[name] = MinCapability(name, capability(row["capability"]), tuple(row["sources"]), row.get("note", ""),
                                  row.get("target_fact"), row.get("since", ""), earlier, row.get("product", ""))
    return out


def min_capability(name: str, version: str | None = None) -> MinCapability:
    """A row by name; with `version` (a release of the component), the minimum that release had. An unknown name is
    a KeyError naming the file, so a typo fails in the first test that asks."""
    rows = table()
    if name not in rows:
        raise KeyError(f"{name!r} is not a row of rlcompat/knowledge/data/capabilities.toml [min_capability] ({', '.join(rows)})")
    row = rows[name]
    if version and release(version):
        for e in row.earlier:
            if release(version) <= release(e.through):
                return MinCapability(name, e.capability, row.sources, e.note, None, product=row.product)
    return row


def runs(name: str, target, version: str | None = None) -> bool:
    """Whether `target` (anything with `.capability`) meets the named minimum (of `version`, where given)."""
    return tuple(target.capability) >= min_capability(name, version).capability


def last_release_that_runs(name: str, target) -> str | None:
    """Where the current release's minimum is above the target but an older one's is not, the last release that
    runs there ("0.19.1" for vLLM on a V100); None where the current release runs, or none does."""
    row = min_capability(name)
    if tuple(target.capability) >= row.capability:
        return None
    held = [e.through for e in row.earlier if tuple(target.capability) >= e.capability]
    return held[-1] if held else None
