"""The doctor's knowledge, read from rlcompat/knowledge/data/environment.toml and rlcompat/knowledge/data/torch_wheels.toml, and the small pieces of
logic that interpret it: release versions, CUDA architecture strings, which wheel variant a torch build is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.knowledge import files
from rlcompat.knowledge.versions import capability, local_tag, release, version_in  # noqa: F401 (read as facts.*)

# Jetson parts run no desktop cubin (torch's DEVICE_REQUIREMENT excludes them) [S1].
_JETSON = {(5, 3), (6, 2), (7, 2), (8, 7)}


@lru_cache(maxsize=None)
def _table(name: str) -> dict:
    return files.load(name)


@lru_cache(maxsize=1)
def environment_facts() -> dict:
    """rlcompat/knowledge/data/environment.toml, with every `min_capability_of = "row"` / `warn_below_of = "row"` (a package's minimum,
    named in rlcompat/knowledge/data/capabilities.toml) filled in as `min_capability` / `warn_below` = that row's capability text."""
    from rlcompat.knowledge.capabilities import min_capability

    data = _table("environment.toml")

    def fill(entry: dict) -> None:
        for key in ("min_capability", "warn_below"):
            if f"{key}_of" in entry:
                entry[key] = min_capability(entry[f"{key}_of"]).text
        for value in entry.values():
            if isinstance(value, dict):
                fill(value)

    for package in data["packages"].values():
        fill(package)
    return data


def error_text(error_id: str) -> str:
    return environment_facts()["errors"][error_id]["text"]


def package_facts(name: str) -> dict:
    return environment_facts()["packages"][name]


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
        for v in _table("torch_wheels.toml")["variant"]
    )


def requires_torch_rows() -> tuple[dict, ...]:
    """rlcompat/knowledge/data/torch_wheels.toml `[[requires_torch]]`: what torch releases of other packages ask pip for."""
    return tuple(_table("torch_wheels.toml").get("requires_torch", ()))


def index_url(tag: str) -> str:
    return _table("torch_wheels.toml")["index_url"].format(tag=tag)


def variant_for(torch_version: str) -> WheelVariant | None:
    """The official variant a torch version string names: its `+cuXXX` tag, or the PyPI default for a plain
    version (PyPI wheels carry no tag). None for CPU/ROCm builds and versions outside the table."""
    tag = local_tag(torch_version)
    if tag is None:
        default = next((d for d in _table("torch_wheels.toml")["pypi_default"]
                        if version_in(torch_version, d["torch_min"], d["torch_below"])), None)
        tag = default["tag"] if default else None
    if tag is None or not tag.startswith("cu"):
        return None
    return next((v for v in wheel_variants() if v.tag == tag and v.ships(torch_version)), None)


def pypi_default_tag(torch_version: str) -> str | None:
    d = next((d for d in _table("torch_wheels.toml")["pypi_default"]
              if version_in(torch_version, d["torch_min"], d["torch_below"])), None)
    return d["tag"] if d else None


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
