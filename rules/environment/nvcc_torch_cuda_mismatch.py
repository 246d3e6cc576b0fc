from __future__ import annotations

from rlcompat.knowledge import versions
from rlcompat.contract import Bad, EnvironmentRule, Good


class NvccTorchCudaMismatch(EnvironmentRule):
    code = "RLC511"
    name = "nvcc-torch-cuda-mismatch"
    title = "nvcc and torch were built for different CUDA major versions"
    what = "Reports an nvcc whose CUDA major version differs from the one the installed torch was built with."
    why = (
        "Building a torch extension from source (flash-attn, apex, DeepSpeed ops, `pip install` of any package "
        "without a wheel) compares the two and raises `The detected CUDA version (13.0) mismatches the version "
        "that was used to compile PyTorch (12.6)` [S46]; it only matters when something is built."
    )
    fix_safety = "No autofix: point CUDA_HOME at a toolkit of torch's major version before building."
    sources = ("S46",)
    prevents = ("X3",)
    severity = "warning"

    bad = (Bad('nvcc = "13.0"\n[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\narches = ["sm_60"]\n', path="env.toml"),)
    good = (
        Good('nvcc = "12.9"\n[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\narches = ["sm_60"]\n', path="env.toml"),
        Good('nvcc = "13.0"\n[torch]\nversion = "2.13.0+cpu"\n', path="env.toml"),
    )

    def check(self, env):
        torch = env.torch
        if not env.nvcc or torch is None or not torch.cuda:
            return []
        if versions.release(env.nvcc)[:1] == versions.release(torch.cuda)[:1]:
            return []
        return [self.finding(
            f"nvcc is CUDA {env.nvcc} but torch {torch.version} was built with CUDA {torch.cuda}: extensions built "
            "here will not compile", error="X3", nvcc=env.nvcc, torch_cuda=torch.cuda,
            remedy=f"set CUDA_HOME to a CUDA {versions.release(torch.cuda)[0]}.x toolkit before building extensions")]
