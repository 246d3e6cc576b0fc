"""rlcompat/knowledge/data/torch_wheels.toml: the official torch wheel variants (CUDA tag, releases, architectures),
what torch other packages' releases pin, and the logic that reads them: which CUDA architecture strings run on a
capability, which variant a torch build or an index is, which wheel to install for a card. doctor (RLC5xx) and the
declared-environment rules (RLC6xx) read this one table."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files
from rlcompat.knowledge.versions import local_tag, release, version_in

# Jetson parts run no desktop cubin (torch's DEVICE_REQUIREMENT excludes them) [S1].
_JETSON = {(5, 3), (6, 2), (7, 2), (8, 7)}


@lru_cache(maxsize=1)
def _table() -> dict:
    return files.load("torch_wheels.toml")


# --- CUDA architectures -----------------------------------------------------------------------------------------

_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([af]?)$")


def parse_arch(arch: str) -> tuple[str, tuple[int, int], str] | None:
    """"sm_61" -> ("sm", (6, 1), ""); "compute_120" -> ("compute", (12, 0), ""); "sm_90a" -> ("sm", (9, 0), "a")."""
    m = _ARCH.match(arch.strip().lower())
    if not m:
        return None
    return m.group(1), (int(m.group(2)), int(m.group(3))), m.group(4)


def arch_runs_on(arch: str, cc: tuple[int, int]) -> bool:
    """Whether code built as `arch` runs on a device of capability `cc` [S1]: a cubin runs on the same major and
    an equal or higher minor (never on Jetson parts unless built for them; `a`/`f` cubins only on their own
    capability); PTX is JIT-compiled for any equal or higher capability."""
    parsed = parse_arch(arch)
    if parsed is None:
        return False
    kind, built, suffix = parsed
    if kind == "compute":
        return cc >= built
    if suffix:
        return cc == built
    if cc in _JETSON and built != cc:
        return False
    return built[0] == cc[0] and built[1] <= cc[1]


def runnable_arches(arches, cc: tuple[int, int]) -> list[str]:
    return [a for a in arches if arch_runs_on(a, cc)]


# --- torch wheel variants ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WheelVariant:
    tag: str  # "cu126"
    cuda: str  # "12.6"
    torch_min: str
    torch_below: str
    arches: tuple[str, ...]
    sources: tuple[str, ...]

    def ships(self, torch_version: str) -> bool:
        return version_in(torch_version, self.torch_min, self.torch_below)

    def runs_on(self, cc: tuple[int, int]) -> bool:
        return bool(runnable_arches(self.arches, cc))


@lru_cache(maxsize=1)
def wheel_variants() -> tuple[WheelVariant, ...]:
    return tuple(
        WheelVariant(v["tag"], v["cuda"], v["torch_min"], v["torch_below"], tuple(v["arches"]), tuple(v["sources"]))
        for v in _table()["variant"]
    )


@dataclass(frozen=True)
class TorchRequirement:
    """What torch a release of another package asks pip for (`[[requires_torch]]`): an exact release, "" for any
    torch (the machine's stays), or a lower bound (`>=2.11`: pip installs the newest torch it allows). `newest`: the
    package's newest release on PyPI when the row was read, what an unbounded requirement of it installs."""
    package: str
    release: str
    extra: str
    torch: str
    proof: str
    newest: bool = False

    @property
    def torch_is_bound(self) -> bool:
        return self.torch[:1] in ("<", ">", "=", "!", "~")


@lru_cache(maxsize=1)
def torch_requirements() -> tuple[TorchRequirement, ...]:
    return tuple(TorchRequirement(r["package"], r["release"], r.get("extra", ""), r["torch"], r["proof"],
                                  bool(r.get("newest", False)))
                 for r in _table().get("requires_torch", ()))


@dataclass(frozen=True)
class HeldBack:
    """An exact release of one package that holds another back (`[[holds_back]]`): `package==release` in an install
    leaves `holds` no newer release than `newest` (unsloth 2025.5.1 pins transformers 4.51.3, which no vLLM after
    0.9.2 accepts)."""
    package: str
    release: str
    holds: str
    newest: str
    proof: str


@lru_cache(maxsize=1)
def held_back() -> tuple[HeldBack, ...]:
    return tuple(HeldBack(r["package"], r["release"], r["holds"], r["newest"], r["proof"])
                 for r in _table().get("holds_back", ()))


def index_url(tag: str) -> str:
    return _table()["index_url"].format(tag=tag)


def pypi_default_tag(torch_version: str) -> str | None:
    d = next((d for d in _table()["pypi_default"]
              if version_in(torch_version, d["torch_min"], d["torch_below"])), None)
    return d["tag"] if d else None


def variant(torch_version: str, tag: str | None = None) -> WheelVariant | None:
    """The official variant of a torch release: the one `tag` names (an index's), else the version's `+cuXXX` tag,
    else PyPI's default for the release (PyPI wheels carry no tag). None for CPU/ROCm builds and versions outside
    the table."""
    if tag is None:
        tag = local_tag(torch_version) or pypi_default_tag(torch_version)
    if tag is None or not tag.startswith("cu"):
        return None
    return next((v for v in wheel_variants() if v.tag == tag and v.ships(torch_version)), None)


def variants_tagged(tag: str) -> list[WheelVariant]:
    return [v for v in wheel_variants() if v.tag == tag]


def tag_lacks(tag: str | None, cc: tuple[int, int]) -> WheelVariant | None:
    """For a torch release the table has no row of on an index (`torch==2.9.1` from cu129, which the table knows for
    2.8 only): the newest known variant of that tag, where every variant the table has of it lacks `cc`'s kernels.
    What an index builds for old cards only shrinks with later releases (shared/gpu-facts.md: no CUDA 12.8+ build has
    ever carried sm_60/61 [S29][S30][S31]), so the card is judged without the release's own row; None otherwise."""
    if not tag or not tag.startswith("cu"):
        return None
    tagged = variants_tagged(tag)
    if not tagged or any(v.runs_on(cc) for v in tagged):
        return None
    return max(tagged, key=lambda v: release(v.torch_min))


def fitting_tag(torch_version: str, cc: tuple[int, int]) -> str | None:
    """The tag of the lowest-CUDA variant of this torch release that runs on `cc` (None when no variant does)."""
    fitting = [v for v in wheel_variants() if v.ships(torch_version) and v.runs_on(cc)]
    return min(fitting, key=lambda v: release(v.cuda)).tag if fitting else None


def cuda_below(cuda: str, other: str) -> bool:
    return release(cuda) < release(other)


@lru_cache(maxsize=1)
def torch_releases() -> tuple[tuple[int, int], ...]:
    """Every torch minor release the wheel table speaks of (2.0 ... the last one a bounded range names)."""
    lines = set()
    for v in wheel_variants():
        low, high = release(v.torch_min), release(v.torch_below)
        if high[0] >= 99:
            high = low
        for minor in range(low[1], high[1] if high[0] == low[0] else low[1] + 1):
            lines.add((low[0], minor))
        lines.add(low[:2])
    return tuple(sorted(lines))


def wheel_for_target(torch_version: str, cc: tuple[int, int]) -> tuple[str, WheelVariant] | None:
    """(pip requirement, variant) to install for `cc`: the installed release if some variant of it runs on the
    card (the one with the lowest CUDA, which needs the oldest driver), else the newest release line that has one.
    None when no official wheel runs on `cc` (Jetson parts, capabilities older than every variant)."""
    fitting = [v for v in wheel_variants() if v.runs_on(cc)]
    if not fitting:
        return None
    same = [v for v in fitting if v.ships(torch_version)]
    if same:
        v = min(same, key=lambda v: release(v.cuda))
        return "torch==" + ".".join(str(p) for p in release(torch_version)[:3]), v
    v = max(fitting, key=lambda v: (release(v.torch_below), -release(v.cuda)[0], -release(v.cuda)[1]))
    below = release(v.torch_below)
    if below[0] >= 99:  # an open-ended line: any release from its first
        return f"torch>={v.torch_min}", v
    return f"torch=={below[0]}.{below[1] - 1}.*", v
