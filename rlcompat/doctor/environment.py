"""Reading an `Environment` from this machine: GPUs through NVML, distributions through importlib.metadata,
torch's build through a subprocess (never imported here), nvcc through `nvcc --version`.

Every reader degrades to "unknown" with a reason; none raises for a missing driver, package or tool.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rlcompat.knowledge import hf_rollout
from rlcompat.installed import state as installed_state
from rlcompat.knowledge import torch_wheels
from rlcompat.knowledge.environment import environment_facts
from rlcompat.doctor.snapshot import Environment, InstalledPatch, Package, TorchBuild, normalise
from rlcompat.nvml import NvmlUnavailable, read_gpus, visible_gpus

# Distributions the doctor reports on: the ones its rules read, and the stack around them.
WATCHED = ("torch", "triton", "pytorch-triton", "transformers", "verl", "accelerate", "deepspeed", "trl",
           "sgl-kernel", "nvidia-ml-py", "vllm-pascal")

TORCH_PROBE = (
    "import json, torch\n"
    "get = getattr(torch.cuda, 'get_arch_list', None)\n"
    "arches = get() if torch.version.cuda else []\n"
    "print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda,"
    " 'hip': getattr(torch.version, 'hip', None), 'arches': arches}))\n"
)
TORCH_PROBE_TIMEOUT = 120  # seconds: a cold import of a CUDA torch on a slow disk takes tens of seconds


def watched_names() -> tuple[str, ...]:
    return WATCHED + tuple(environment_facts()["packages"])


def read_packages(names=None, distribution=metadata.distribution) -> dict[str, Package]:
    """name -> Package for each installed distribution among `names`; reads METADATA only, imports nothing."""
    out: dict[str, Package] = {}
    for name in names or watched_names():
        try:
            dist = distribution(name)
        except metadata.PackageNotFoundError:
            continue
        base = getattr(dist, "_path", None)  # PathDistribution's folder; absent for other finders
        meta = Path(base) / "METADATA" if base is not None else None
        key = normalise(dist.metadata["Name"] or name)
        out[key] = Package(key, dist.version, str(meta) if meta is not None and meta.is_file() else None)
    return out


def probe_torch(run=subprocess.run, python: str = sys.executable, timeout: float = TORCH_PROBE_TIMEOUT,
                installed_version: str | None = None) -> TorchBuild | None:
    """torch's version, CUDA/HIP build and arch list, from a child interpreter; None when torch is not installed.

    When the child fails (a broken install, a timeout) the arch list is inferred from the version's wheel tag
    (rlcompat/knowledge/data/torch_wheels.toml), and `problem` says why torch could not be asked."""
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        proc = run([python, "-c", TORCH_PROBE], capture_output=True, text=True, timeout=timeout,
                   env={**os.environ, "PYTHONWARNINGS": "ignore"})
        if proc.returncode == 0:
            data = json.loads(proc.stdout.strip().splitlines()[-1])
            return TorchBuild(version=data["version"], cuda=data["cuda"], hip=data["hip"],
                              arches=tuple(data["arches"] or ()), arches_from="torch")
        last = (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]
        problem = f"`import torch` failed: {last}"
    except subprocess.TimeoutExpired:
        problem = f"`import torch` took longer than {timeout:.0f} s"
    except (OSError, ValueError, KeyError, IndexError) as exc:
        problem = f"could not ask torch: {exc}"
    version = installed_version or _installed_version("torch")
    if version is None:
        return TorchBuild(version="unknown", cuda=None, arches_from="unknown", problem=problem)
    variant = torch_wheels.variant(version)
    if variant is None:
        return TorchBuild(version=version, cuda=None, arches_from="unknown", problem=problem)
    return TorchBuild(version=version, cuda=variant.cuda, arches=(), arches_from="table", problem=problem)


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def find_nvcc(env=None, which=shutil.which) -> str | None:
    env = os.environ if env is None else env
    found = which("nvcc")
    if found:
        return found
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var) and (Path(env[var]) / "bin" / "nvcc").is_file():
            return str(Path(env[var]) / "bin" / "nvcc")
    return None


def nvcc_version(path: str | None, run=subprocess.run) -> str | None:
    """"13.0" from `nvcc --version` ("Cuda compilation tools, release 13.0, V13.0.88")."""
    if not path:
        return None
    try:
        out = run([path, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def installed_patches(search_path: list[str], env=None) -> tuple[InstalledPatch, ...]:
    """What `rlcompat fix --installed` patched in a site-packages folder on `search_path`, and where it stands."""
    return tuple(InstalledPatch(s.manifest.dist, s.manifest.version, s.installed_version, s.manifest.target, s.state,
                                s.manifest.unsafe_fixes, s.patched, s.unpatched, s.edited, str(s.folder))
                 for s in installed_state.patches_here(search_path, env))


def read_machine(pynvml_module=None, env=None):
    """(visible GPUs, why there are none, how many NVML sees)."""
    env = os.environ if env is None else env
    try:
        gpus = read_gpus(pynvml_module)
    except NvmlUnavailable as exc:
        return (), str(exc), 0
    visible = tuple(visible_gpus(gpus, env))
    if not gpus:
        return (), "NVML works but reports no GPU", 0
    if not visible:
        value = env.get("CUDA_VISIBLE_DEVICES", "")
        return (), f"{len(gpus)} GPU(s), none visible through CUDA_VISIBLE_DEVICES={value!r}", len(gpus)
    return visible, None, len(gpus)


def collect(pynvml_module=None, env=None, stack: bool = True) -> Environment:
    """The machine, and with `stack` the installed packages, torch's build and nvcc (seconds: torch is imported
    in a child process)."""
    gpus, problem, total = read_machine(pynvml_module, env)
    if not stack:
        return Environment(gpus=gpus, gpu_problem=problem, all_gpus=total)
    packages = read_packages()
    nvcc_path = find_nvcc(env)
    torch_version = packages["torch"].version if "torch" in packages else None
    return Environment(
        gpus=gpus,
        gpu_problem=problem,
        all_gpus=total,
        packages=packages,
        torch=probe_torch(installed_version=torch_version),
        nvcc=nvcc_version(nvcc_path),
        nvcc_path=nvcc_path,
        python=f"{sys.version.split()[0]} at {sys.executable}",
        verl_plugins=hf_rollout.entry_point_values(),
        installed_patches=installed_patches(sys.path),
    )
