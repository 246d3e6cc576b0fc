"""rlcompat/knowledge/data/vllm_pascal.toml: the community's Pascal builds of vLLM (`vllm-pascal`) and the verl
releases that can roll out with one. RLC401 and doctor's rollout advice ask `advice` here, so they name the same
build, and name one only where a verl release's range, its engine and a published build meet on the card."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files, versions
from rlcompat.knowledge.files import KnowledgeFileError

FILE = "vllm_pascal.toml"
ENGINES = ("v0", "v1")


@dataclass(frozen=True)
class Build:
    version: str
    published: bool
    torch: str | None  # the vLLM release's torch pin, where read
    python: str | None  # its requires-python, where read
    where: str


@dataclass(frozen=True)
class VerlPairing:
    verl: str
    vllm: str  # ">=0.7.0,<=0.8.5": the range the verl release declares and checks
    vllm_proof: str
    engine: str  # "v0" (its default rollout builds vllm.LLM) or "v1" (only AsyncLLM)
    engine_proof: str


@dataclass(frozen=True)
class Table:
    package: str
    home: str
    index_url: str
    wheels_url: str
    capabilities: frozenset[tuple[int, int]]
    v1_below_8_since: str
    companions: str
    sources: tuple[str, ...]
    builds: tuple[Build, ...]
    pairings: tuple[VerlPairing, ...]


def _sort_key(version: str) -> tuple:
    """PEP 440 order for the versions the table holds: X.Y.Z, then its .postN after it."""
    post = re.search(r"\.post(\d+)$", version)
    return versions.release(version), (int(post.group(1)) + 1 if post else 0)


_BOUND = re.compile(r"^(>=|<=)\s*(\S+)$")


def in_range(version: str, spec: str) -> bool:
    """Whether `version` meets `spec`, a comma-separated list of `>=X` and `<=X` bounds."""
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        op, bound = _BOUND.match(part).groups()
        if (op == ">=" and _sort_key(version) < _sort_key(bound)) or (op == "<=" and _sort_key(version) > _sort_key(bound)):
            return False
    return True


@lru_cache(maxsize=1)
def table() -> Table:
    data = files.load(FILE)
    where = f"rlcompat/knowledge/data/{FILE}"
    builds = []
    for row in data["build"]:
        for v in row["versions"]:
            builds.append(Build(v, bool(row["published"]), row.get("torch"), row.get("python"), row.get("where", "")))
    pairings = []
    for row in data["verl"]:
        if row["engine"] not in ENGINES:
            raise KnowledgeFileError(f"{where}: verl {row['version']}: engine {row['engine']!r} is not one of {ENGINES}")
        for part in row["vllm"].split(","):
            if not _BOUND.match(part.strip()):
                raise KnowledgeFileError(f"{where}: verl {row['version']}: {part.strip()!r} is not a >= or <= bound")
        pairings.append(VerlPairing(row["version"], row["vllm"], row["vllm_proof"], row["engine"], row["engine_proof"]))
    return Table(data["package"], data["home"], data["index_url"], data["wheels_url"],
                 frozenset(versions.capability(c) for c in data["capabilities"]), data["v1_below_8_since"],
                 data["companions"], tuple(data["sources"]), tuple(sorted(builds, key=lambda b: _sort_key(b.version))),
                 tuple(pairings))


def pairing(verl_version: str) -> VerlPairing | None:
    return next((p for p in table().pairings if p.verl == verl_version), None)


def declared_vllm_at_most(verl_version: str, release: str) -> bool:
    """Every vLLM the verl release declares is `release` or older (its range has an upper bound at or below it):
    where `release` is the last vLLM that runs on a card, the release's own vLLM runs there."""
    p = pairing(verl_version)
    if p is None:
        return False
    ceilings = [bound[2:].strip() for bound in p.vllm.split(",") if bound.strip().startswith("<=")]
    return bool(ceilings) and all(_sort_key(c) <= _sort_key(release) for c in ceilings)


def built_for(target) -> bool:
    """The builds carry kernels for this card (sm60, sm61) and nothing else."""
    return target.capability in table().capabilities


def _newest_fit(p: VerlPairing) -> Build | None:
    """The newest published build in the release's vLLM range whose engine below 8.0 is one the release's rollout
    needs (V0 always; V1 from `v1_below_8_since`, which no build reaches)."""
    t = table()
    fits = [b for b in t.builds if b.published and in_range(b.version, p.vllm)
            and (p.engine == "v0" or _sort_key(b.version) >= _sort_key(t.v1_below_8_since))]
    return fits[-1] if fits else None


def usable_build(verl_version: str, target) -> Build | None:
    """The newest published build that verl `verl_version` rolls out with on `target` (a card the builds are for),
    or None."""
    p = pairing(verl_version)
    return _newest_fit(p) if p is not None and built_for(target) else None


def served_releases() -> tuple[str, ...]:
    """The verl releases some published build serves (on the cards the builds are for)."""
    return tuple(p.verl for p in table().pairings if _newest_fit(p) is not None)


def advice(verl_version: str, target, dtype: str, dtype_key: str) -> str | None:
    """The words RLC401 and doctor add where a build is usable (None elsewhere): which build, where it is published,
    what it needs beside it, and the rollout dtype to set (`dtype` is the precision policy's for the target)."""
    build = usable_build(verl_version, target)
    if build is None:
        return None
    t = table()
    pins = ", ".join(x for x in (f"torch {build.torch}" if build.torch else "",
                                 f"Python {build.python}" if build.python else "") if x)
    fp16 = "float16 runs at 1/64 of fp32 speed on this card" if target.capability == (6, 1) else "float16 also runs"
    return (f"{t.package} {build.version} is a community build of vLLM for Pascal, not vLLM's own "
            f"({t.home}{'; ' + pins if pins else ''}): pip install {t.package}=={build.version} --extra-index-url "
            f"{t.index_url}, with {t.companions}; verl {verl_version} rolls out with it on vLLM's V0 engine with "
            f"{dtype_key}={dtype} (bfloat16 cannot run below 8.0; {fp16})")
