from __future__ import annotations

from rlcompat.knowledge import torch_wheels, versions
from rlcompat.knowledge.environment import environment_facts
from rlcompat.contract import Bad, EnvironmentRule, Good


def _branch(driver_version: str) -> int:
    return versions.release(driver_version)[0]


class DriverTooOldForTorch(EnvironmentRule):
    code = "RLC512"
    name = "driver-too-old-for-torch"
    title = "The NVIDIA driver is too old for the CUDA version torch was built with"
    what = (
        "Reports a driver branch below the minimum for the CUDA major version of the installed torch (450 for "
        "11.x, 525 for 12.x, 580 for 13.x). Needs a GPU: without one the driver is unknown."
    )
    why = (
        "Within a CUDA major version a newer runtime runs on any driver from that major's first branch "
        "(minor-version compatibility); across majors it does not [S47]: torch cannot initialise CUDA "
        "(`CUDA driver version is insufficient for CUDA runtime version`). On Maxwell, Pascal and Volta the "
        "driver cannot be upgraded past R580 [S41], so a cu13x torch needs at least that branch there."
    )
    fix_safety = "No autofix: upgrade the driver, or install a torch variant for an older CUDA (cu126 needs 525+)."
    sources = ("S47", "S41")
    prevents = ("X5",)

    bad = (Bad('[[gpu]]\nname = "Tesla P40"\ncapability = "6.1"\ndriver = "550.163.01"\n'
               '[torch]\nversion = "2.11.0+cu130"\ncuda = "13.0"\narches = ["sm_75"]\n', path="env.toml"),)
    good = (
        Good('[[gpu]]\nname = "Tesla P40"\ncapability = "6.1"\ndriver = "550.163.01"\n'
             '[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\narches = ["sm_60"]\n', path="env.toml"),
        Good('[torch]\nversion = "2.11.0+cu130"\ncuda = "13.0"\narches = ["sm_75"]\n', path="env.toml"),
    )

    def check(self, env):
        torch = env.torch
        if not env.driver_version or torch is None or not torch.cuda:
            return []
        major = str(versions.release(torch.cuda)[0])
        table = environment_facts()["driver"]["min_branch"]
        need = next((m["branch"] for m in table if m["cuda"] == major), None)
        if need is None or _branch(env.driver_version) >= need:
            return []
        fitting = torch_wheels.wheel_for_target(torch.version, self.target.capability)
        older = ""
        if fitting and versions.release(fitting[1].cuda)[0] < int(major):
            older = f", or install the {fitting[1].tag} torch: pip install '{fitting[0]}' --index-url {torch_wheels.index_url(fitting[1].tag)}"
        return [self.finding(
            f"driver {env.driver_version} (R{_branch(env.driver_version)}) is older than R{need}, the first branch "
            f"for CUDA {major}.x that torch {torch.version} needs", error="X5",
            remedy=f"upgrade the driver to R{need} or newer{older}", package=env.package("torch"))]
