from __future__ import annotations

from rlcompat.knowledge import torch_wheels
from rlcompat.contract import Bad, EnvironmentRule, Good


class TorchCpuOnlyBuild(EnvironmentRule):
    code = "RLC502"
    name = "torch-cpu-only-build"
    title = "The installed torch is a CPU-only build"
    what = "Reports a torch without CUDA (`torch.version.cuda` is None, e.g. `2.13.0+cpu`) when a GPU is the target."
    why = (
        "A CPU-only build has no CUDA runtime at all: the first `.cuda()` or `device=\"cuda\"` raises "
        "`AssertionError: Torch not compiled with CUDA enabled` [S46], and `torch.cuda.is_available()` is False, "
        "so verl and transformers silently fall back or fail later."
    )
    fix_safety = "No autofix: install a CUDA wheel variant that ships the target (see RLC501 for which)."
    sources = ("S46", "S29", "S30")
    prevents = ("X1",)

    bad = (
        Bad('[torch]\nversion = "2.13.0+cpu"\n', path="env.toml"),
        Bad('[[gpu]]\nname = "Tesla T4"\ncapability = "7.5"\n[torch]\nversion = "2.5.1+cpu"\n', target="sm75", path="env.toml"),
    )
    good = (
        Good('[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\narches = ["sm_60"]\n', path="env.toml"),
        Good('[torch]\nversion = "2.4.0+rocm6.1"\nhip = "6.1"\n', path="env.toml"),
        Good('[torch]\nversion = "2.8.0"\nproblem = "timed out after 60 s"\narches_from = "unknown"\n', path="env.toml"),
        Good("", path="env.toml"),
    )

    def check(self, env):
        torch = env.torch
        if torch is None or not torch.is_cpu_only:
            return []
        fitting = torch_wheels.wheel_for_target(torch.version, self.target.capability)
        if fitting is None:
            remedy = f"no official CUDA wheel ships {self.target.name}: build torch from source"
        else:
            requirement, variant = fitting
            remedy = (f"install a CUDA build: pip install '{requirement}' --index-url {torch_wheels.index_url(variant.tag)}")
        return [self.finding(f"torch {torch.version} is a CPU-only build: it cannot use {self.where()}",
                             error="X1", remedy=remedy, package=env.package("torch"))]
