"""Framework config classes whose field defaults select what some GPUs cannot run (data/config_class_defaults.toml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files


@dataclass(frozen=True)
class ClassDefault:
    qualname: str  # "xtuner.v1.config.FSDPConfig"
    fields: tuple[str, ...]  # keywords that set what the default decides
    kind: str  # a kind of rlcompat/knowledge/data/frameworks/kinds.toml
    default: str
    release: str  # "XTuner 1.0.0rc0"
    proof: str
    remedy: str


@lru_cache(maxsize=1)
def configs() -> dict[str, ClassDefault]:
    """Each qualname a file may call such a class by -> its row (RLC134 reads the rows of kind `bf16-switch`, RLC125
    the others)."""
    out = {}
    for row in files.load("config_class_defaults.toml").get("config", ()):
        if not all(row.get(k) for k in ("qualnames", "fields", "kind", "default", "release", "proof", "remedy")):
            raise ValueError("rlcompat/knowledge/data/config_class_defaults.toml: a [[config]] needs qualnames, fields, "
                             "kind, default, release, proof and remedy")
        for qualname in row["qualnames"]:
            out[qualname] = ClassDefault(qualname, tuple(row["fields"]), row["kind"], row["default"], row["release"],
                                         row["proof"], row["remedy"])
    return out


def class_names(kinds: frozenset[str] | None = None, but: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The classes' own names (the last part of each qualname), what a call spells: of the rows of `kinds` (every
    kind where None), less those of `but`."""
    return tuple(sorted({q.rsplit(".", 1)[-1] for q, row in configs().items() if _of(row, kinds, but)}))


def called(qualname: str | None, kinds: frozenset[str] | None = None,
           but: frozenset[str] = frozenset()) -> ClassDefault | None:
    """The row of the class a call resolves to (`qualname`), where it is one of these kinds (as in class_names)."""
    row = configs().get(qualname or "")
    return row if row is not None and _of(row, kinds, but) else None


def _of(row: ClassDefault, kinds: frozenset[str] | None, but: frozenset[str]) -> bool:
    return (kinds is None or row.kind in kinds) and row.kind not in but
