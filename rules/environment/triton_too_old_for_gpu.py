from __future__ import annotations

from rlcompat.knowledge import versions
from rlcompat.knowledge.environment import environment_facts
from rlcompat.contract import Bad, below, EnvironmentRule, Good


def _requirement(target) -> dict | None:
    """The strictest Triton minimum that applies to the target, if any."""
    fitting = [r for r in environment_facts()["triton_min_version"] if not below(target.capability, r["min_capability"])]
    return max(fitting, key=lambda r: versions.release(r["version"]), default=None)


class TritonTooOldForGpu(EnvironmentRule):
    code = "RLC509"
    name = "triton-too-old-for-gpu"
    title = "The installed Triton cannot compile for the target GPU"
    what = "Reports a `triton` (or `pytorch-triton`) release older than the first one that knows the target's architecture."
    why = (
        "Triton compiles with its bundled ptxas, which must know the architecture: sm_120 needs Triton 3.3 "
        "(shipped with torch 2.7) and sm_121 Triton 3.6; older ones fail with `ptxas fatal : Value 'sm_120' is "
        "not defined for option 'gpu-name'` in every torch.compile, flex_attention or Liger kernel [S38]."
    )
    fix_safety = "No autofix: upgrade torch, which pins its Triton, or Triton alone."
    sources = ("S38",)
    prevents = ("E16",)

    bad = (
        Bad('[packages]\ntriton = "3.2.0"\n', target="sm120", path="env.toml"),
        Bad('[packages]\ntriton = "3.5.1"\n', target="sm121", path="env.toml"),
    )
    good = (
        Good('[packages]\ntriton = "3.3.1"\n', target="sm120", path="env.toml"),
        Good('[packages]\ntriton = "3.2.0"\n', target="sm90", path="env.toml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return _requirement(target) is not None

    def check(self, env):
        req = _requirement(self.target)
        pkg = env.package("triton") or env.package("pytorch-triton")
        if req is None or pkg is None or versions.release(pkg.version) >= versions.release(req["version"]):
            return []
        return [self.finding(
            f"{pkg.name} {pkg.version} cannot compile for {self.where()}: it needs Triton {req['version']}+",
            error=req["error"], package=pkg,
            remedy=f"upgrade: pip install 'triton>={req['version']}' (or a torch release that pins one)")]
