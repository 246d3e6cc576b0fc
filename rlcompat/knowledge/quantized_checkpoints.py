"""rlcompat/knowledge/data/quantized_checkpoints.toml: which quantization a model's name says its checkpoint has, and the lowest
compute capability of the engines that load that format (RLC416). Read on first use."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files
from rlcompat.knowledge.versions import capability, capability_text


@dataclass(frozen=True)
class Engine:
    engine: str
    min_capability: tuple[int, int]
    where: str
    sources: tuple[str, ...]
    framework: str = ""  # "" applies everywhere; else only to that framework's config files

    @property
    def capability_text(self) -> str:
        return capability_text(self.min_capability)


@dataclass(frozen=True)
class Format:
    name: str
    tokens: frozenset[str]
    engines: tuple[Engine, ...]


@lru_cache(maxsize=1)
def _table() -> dict:
    data = files.load("quantized_checkpoints.toml")
    formats = []
    for row in data.get("format", ()):
        engines = []
        for e in row.get("engine", ()):
            engines.append(Engine(e["engine"], capability(e["min_capability"]), e["where"], tuple(e.get("sources", ())),
                                  e.get("framework", "")))
        formats.append(Format(row["name"], frozenset(t.lower() for t in row["tokens"]), tuple(engines)))
    return {"model_keys": tuple(data["model_keys"]), "formats": tuple(formats)}


def model_keys() -> tuple[str, ...]:
    return _table()["model_keys"]


def formats() -> tuple[Format, ...]:
    return _table()["formats"]


def name_format(model_name: str) -> Format | None:
    """The format a model name's parts say (`nvidia/Qwen3-30B-A3B-NVFP4` -> NVFP4), or None."""
    parts = {p for p in re.split(r"[-_./\s]+", model_name.strip().lower()) if p}
    return next((f for f in formats() if f.tokens & parts), None)


def engines_for(fmt: Format, frameworks: set[str]) -> tuple[Engine, ...]:
    """The engines that would load the checkpoint: those of a framework the file belongs to, else the general ones."""
    own = tuple(e for e in fmt.engines if e.framework and e.framework in frameworks)
    return own or tuple(e for e in fmt.engines if not e.framework)
