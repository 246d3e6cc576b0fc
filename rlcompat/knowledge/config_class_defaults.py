"""Framework config classes whose field defaults select what some GPUs cannot run (data/config_class_defaults.toml).

A row read from one release of a framework names it (`framework`, `versions`): a tree that runs another release of
that framework is judged with the row of its own release, and a tree whose release is not known with the newest
row, its message saying so (claims of a release's file:line hold for that release only)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files
from rlcompat.knowledge.versions import release as version_order


@dataclass(frozen=True)
class ClassDefault:
    qualname: str  # "xtuner.v1.config.FSDPConfig"
    fields: tuple[str, ...]  # keywords that set what the default decides; () for a function no keyword of which does
    kind: str  # a kind of rlcompat/knowledge/data/frameworks/kinds.toml
    default: str
    release: str  # "XTuner 1.0.0rc0"
    proof: str
    remedy: str
    framework: str = ""  # "xtuner": the framework whose releases `versions` are ("" for a row of no framework's tree)
    versions: tuple[str, ...] = ()  # the releases whose files the proof was read from
    known: bool = True  # False: the tree's release of `framework` is not one of `versions` (judged with this row)


_REQUIRED = ("qualnames", "kind", "default", "release", "proof", "remedy")


@lru_cache(maxsize=1)
def configs() -> dict[str, tuple[ClassDefault, ...]]:
    """Each qualname a file may call such a class by -> its rows, newest release first (RLC134 reads the rows of
    kind `bf16-switch`, RLC125 the others)."""
    out: dict[str, list[ClassDefault]] = {}
    for row in files.load("config_class_defaults.toml").get("config", ()):
        if not all(row.get(k) for k in _REQUIRED) or "fields" not in row or bool(row.get("framework")) != bool(row.get("versions")):
            raise ValueError("rlcompat/knowledge/data/config_class_defaults.toml: a [[config]] needs qualnames, fields, "
                             "kind, default, release, proof and remedy (and `versions` with `framework`)")
        for qualname in row["qualnames"]:
            out.setdefault(qualname, []).append(ClassDefault(
                qualname, tuple(row["fields"]), row["kind"], row["default"], row["release"], row["proof"],
                row["remedy"], row.get("framework", ""), tuple(row.get("versions", ()))))
    newest = lambda r: max((version_order(v) for v in r.versions), default=())  # noqa: E731
    return {q: tuple(sorted(rows, key=newest, reverse=True)) for q, rows in out.items()}


def fields_of(but: frozenset[str] = frozenset()) -> frozenset[str]:
    """Every keyword the rows (but those of kinds `but`) name."""
    return frozenset(f for rows in configs().values() for row in rows if row.kind not in but for f in row.fields)


def class_names(kinds: frozenset[str] | None = None, but: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The classes' own names (the last part of each qualname), what a call spells: of the rows of `kinds` (every
    kind where None), less those of `but`."""
    return tuple(sorted({q.rsplit(".", 1)[-1] for q, rows in configs().items() if any(_of(r, kinds, but) for r in rows)}))


def called(qualname: str | None, kinds: frozenset[str] | None = None, but: frozenset[str] = frozenset(),
           release_of=None) -> ClassDefault | None:
    """The row of the class a call resolves to (`qualname`), where it is one of these kinds (as in class_names): the
    row of the release the tree runs (`release_of(framework)`: that release where known exactly, else None), else the
    newest row, marked `known=False`."""
    rows = [r for r in configs().get(qualname or "", ()) if _of(r, kinds, but)]
    if not rows:
        return None
    if not rows[0].framework:
        return rows[0]
    running = release_of(rows[0].framework) if release_of is not None else None
    mine = next((r for r in rows if running in r.versions), None)
    if mine is not None:
        return mine
    from dataclasses import replace

    return replace(rows[0], known=False)


def _of(row: ClassDefault, kinds: frozenset[str] | None, but: frozenset[str]) -> bool:
    return (kinds is None or row.kind in kinds) and row.kind not in but


@lru_cache(maxsize=1)
def _unread() -> dict[tuple[str, str], tuple[tuple[str, str], ...]]:
    """(qualname, field) -> ((framework, version), ...) of the `[[unread]]` rows: fields no code of those releases
    reads."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for row in files.load("config_class_defaults.toml").get("unread", ()):
        if not all(row.get(k) for k in ("qualnames", "fields", "framework", "versions", "proof", "sources")):
            raise ValueError("rlcompat/knowledge/data/config_class_defaults.toml: an [[unread]] needs qualnames, fields, "
                             "framework, versions, proof and sources")
        for qualname in row["qualnames"]:
            for name in row["fields"]:
                out.setdefault((qualname, name), []).extend((row["framework"], v) for v in row["versions"])
    return {k: tuple(v) for k, v in out.items()}


def unread(qualname: str | None, field_name: str, release_of) -> bool:
    """Whether the keyword `field_name` of a call of `qualname` is a field no code of the release the tree runs reads
    (`release_of(framework)`: that release where known exactly, else None: then nothing is claimed)."""
    return any(release_of(fw) == version for fw, version in _unread().get((qualname or "", field_name), ()))


def release_in(ctx):
    """`release_of` for a rule's context: the release of a framework its file's tree runs, where rlcompat has that
    release's knowledge (identity `exact`), else None."""
    scanned = getattr(ctx, "scanned", None)

    def release_of(framework: str) -> str | None:
        if scanned is None:
            return None
        found = scanned.framework(framework)
        return found.version if found.exact else None

    return release_of


def unread_name(class_name: str, field_name: str, release_of) -> bool:
    """`unread` for a call known by the class' own name only (a setting's `call`: `RolloutConfig`), where the tree
    runs a release of the framework that row was read from (so the name is that framework's class)."""
    return any(q.rsplit(".", 1)[-1] == class_name and f == field_name and release_of(fw) == version
               for (q, f), rows in _unread().items() for fw, version in rows)
