from __future__ import annotations

from rlcompat.knowledge import versions
from rlcompat.knowledge.environment import environment_facts
from rlcompat.contract import Bad, below, EnvironmentRule, Good


class NvccCannotTargetGpu(EnvironmentRule):
    code = "RLC510"
    name = "nvcc-cannot-target-gpu"
    title = "The CUDA toolkit (nvcc) on PATH cannot compile for the target GPU"
    what = (
        "Reports an nvcc that cannot build code for the target: CUDA 13+ for capabilities below 7.5, or a toolkit "
        "older than the first that knows the architecture (11.8 for sm90, 12.8 for sm100/sm120)."
    )
    why = (
        "CUDA 13.0 removed offline compilation for capabilities below 7.5 [S27][S28]: building flash-attn, apex, "
        "a DeepSpeed op or any torch C++/CUDA extension for the card stops with `nvcc fatal : Unsupported gpu "
        "architecture 'compute_61'` [S48]. New architectures need a toolkit at least as new as their first "
        "release [S28]."
    )
    fix_safety = "No autofix: install a CUDA 12.x toolkit (12.9 is the last for sm<75) and put it first on PATH."
    sources = ("S27", "S28", "S48")
    prevents = ("X2",)

    bad = (
        Bad('nvcc = "13.0"\n', path="env.toml"),
        Bad('nvcc = "12.4"\n', target="sm120", path="env.toml"),
    )
    good = (
        Good('nvcc = "12.9"\n', path="env.toml"),
        Good('nvcc = "13.0"\n', target="sm75", path="env.toml"),
        Good("", path="env.toml"),
    )

    def check(self, env):
        if not env.nvcc:
            return []
        table = environment_facts()["nvcc"]
        cc, nvcc = self.target.capability, versions.release(env.nvcc)
        cut = table["cannot_target_below"]
        if below(cc, cut["capability"]) and nvcc >= versions.release(cut["cuda"]):
            return [self.finding(
                f"nvcc {env.nvcc} cannot compile for {self.where()}: CUDA {cut['cuda']}+ dropped capabilities below "
                f"{cut['capability']}", error=cut["error"], cc=f"{cc[0]}{cc[1]}",
                remedy="install CUDA 12.9 (the last toolkit for this card) and put its bin/ first on PATH, or set "
                       "CUDA_HOME to it before building extensions")]
        needed = [m for m in table["min_cuda"] if not below(cc, m["capability"]) and cc[0] == versions.capability(m["capability"])[0]]
        need = max(needed, key=lambda m: versions.capability(m["capability"]), default=None)
        if need and nvcc < versions.release(need["cuda"]):
            return [self.finding(
                f"nvcc {env.nvcc} is older than CUDA {need['cuda']}, the first toolkit that targets {self.where()}",
                error="X2", cc=f"{cc[0]}{cc[1]}", remedy=f"install CUDA {need['cuda']} or newer")]
        return []
