"""What the doctor knows about a machine: a plain, immutable snapshot that environment rules read.

`environment.collect()` fills one from the live machine; `Environment.from_toml()` builds one from a small TOML
description, which is how rule examples and tests describe machines (see docs/doctor.md):

    nvcc = "13.0"
    [[gpu]]
    name = "Tesla P40"
    capability = "6.1"
    memory_gib = 24
    driver = "580.95.05"
    [torch]
    version = "2.8.0+cu128"
    arches = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    [packages]
    flash-attn = "2.8.3"

(`verl_plugins = ["rlcompat.verl_plugin.entry"]`, top level: the `verl.plugins` entry points installed.
`[[installed_patch]]` tables: what `rlcompat fix --installed` patched and where it stands, as `InstalledPatch`
fields: `dist = "verl"`, `patched_version = "0.9.1"`, `installed_version = "0.9.1"`, `target = "sm61"`,
`state = "removed"`, `unpatched = ["verl/utils/model.py"]`.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rlcompat._toml import load_toml_text
from rlcompat.knowledge import versions
from rlcompat.nvml import Gpu

ENVIRONMENT_PATH = "<environment>"  # the location of findings about the machine rather than one distribution


def normalise(name: str) -> str:
    """PEP 503 name normalisation: Flash_Attn -> flash-attn."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Package:
    name: str  # normalised distribution name
    version: str
    metadata_path: str | None = None  # the distribution's METADATA file, where findings about it point


@dataclass(frozen=True)
class TorchBuild:
    version: str  # "2.8.0+cu128"
    cuda: str | None  # torch.version.cuda; None for CPU and ROCm builds
    hip: str | None = None  # torch.version.hip
    arches: tuple[str, ...] = ()  # torch.cuda.get_arch_list(): "sm_60", "compute_120"
    arches_from: str = "torch"  # "torch" (asked torch), "table" (inferred from the wheel's tag), "unknown"
    problem: str | None = None  # why torch could not be asked, if it could not

    @property
    def is_cpu_only(self) -> bool:
        return self.cuda is None and self.hip is None and self.problem is None


@dataclass(frozen=True)
class InstalledPatch:
    """A patch `rlcompat fix --installed` keeps for a site-packages folder on this Python's path
    (rlcompat/installed/state.py), and where it stands now."""

    dist: str
    patched_version: str
    installed_version: str | None  # None: no longer installed there
    target: str
    state: str  # applied, removed, partly, edited, other-version, not-installed (state.PatchStatus.state)
    unsafe_fixes: bool = False
    patched: tuple[str, ...] = ()  # files (paths in site-packages) that hold what rlcompat wrote
    unpatched: tuple[str, ...] = ()  # files that hold their original bytes again
    edited: tuple[str, ...] = ()  # files that hold neither
    folder: str = ""  # the backup's state folder

    @property
    def command(self) -> str:
        """The command that (re-)applies the patch."""
        from rlcompat.installed.locate import fix_command

        return fix_command(self.dist, self.target, self.unsafe_fixes)


@dataclass(frozen=True)
class Environment:
    gpus: tuple[Gpu, ...] = ()  # the GPUs CUDA would use (CUDA_VISIBLE_DEVICES applied)
    gpu_problem: str | None = None  # why no GPU was read (no NVML, no driver, none visible), if none was
    all_gpus: int = 0  # GPUs NVML sees, visible or not
    packages: dict[str, Package] = field(default_factory=dict)
    torch: TorchBuild | None = None
    nvcc: str | None = None  # "13.0"
    nvcc_path: str | None = None
    python: str = ""
    verl_plugins: tuple[str, ...] = ()  # values of the installed `verl.plugins` entry points ("rlcompat.verl_plugin.entry")
    installed_patches: tuple[InstalledPatch, ...] = ()  # what `rlcompat fix --installed` patched here

    def package(self, name: str) -> Package | None:
        return self.packages.get(normalise(name))

    @property
    def driver_version(self) -> str | None:
        return self.gpus[0].driver_version if self.gpus else None

    @property
    def cuda_driver_version(self) -> str | None:
        return self.gpus[0].cuda_driver_version if self.gpus else None

    @classmethod
    def from_toml(cls, text: str) -> Environment:
        data = load_toml_text(text)
        gpus = tuple(
            Gpu(
                index=i,
                name=g["name"],
                uuid=g.get("uuid", f"GPU-{i:08d}-0000-0000-0000-000000000000"),
                capability=versions.capability(g["capability"]),
                memory_total=int(float(g.get("memory_gib", 16)) * 2**30),
                driver_version=g.get("driver", "580.95.05"),
                cuda_driver_version=g.get("cuda_driver", "13.0"),
            )
            for i, g in enumerate(data.get("gpu", []))
        )
        packages = {normalise(k): Package(normalise(k), str(v)) for k, v in data.get("packages", {}).items()}
        torch = None
        if "torch" in data:
            t = data["torch"]
            torch = TorchBuild(version=t["version"], cuda=t.get("cuda"), hip=t.get("hip"),
                               arches=tuple(t.get("arches", ())), arches_from=t.get("arches_from", "torch"),
                               problem=t.get("problem"))
            packages.setdefault("torch", Package("torch", t["version"]))
        return cls(gpus=gpus, gpu_problem=None if gpus else "no GPU described", all_gpus=len(gpus),
                   packages=packages, torch=torch, nvcc=data.get("nvcc"), python=data.get("python", ""),
                   verl_plugins=tuple(data.get("verl_plugins", ())),
                   installed_patches=tuple(_patch(p) for p in data.get("installed_patch", ())))


def _patch(data: dict) -> InstalledPatch:
    lists = {k: tuple(data.get(k, ())) for k in ("patched", "unpatched", "edited")}
    return InstalledPatch(data["dist"], data["patched_version"], data.get("installed_version"), data["target"],
                          data["state"], bool(data.get("unsafe_fixes", False)), **lists, folder=data.get("folder", ""))
