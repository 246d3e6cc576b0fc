from __future__ import annotations

from rlcompat.knowledge import torch_wheels
from rlcompat.contract import Bad, EnvironmentRule, Good

_P40_CU128 = '''[[gpu]]
name = "Tesla P40"
capability = "6.1"
[torch]
version = "2.8.0+cu128"
cuda = "12.8"
arches = ["sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
'''


class TorchWheelLacksArch(EnvironmentRule):
    code = "RLC501"
    name = "torch-wheel-lacks-arch"
    title = "The installed torch build has no kernels for the target GPU"
    what = (
        "Reads the CUDA architectures the installed torch was built for (`torch.cuda.get_arch_list()`, asked in a "
        "subprocess; from the wheel's `+cuXXX` tag and the wheel table when torch cannot be asked) and reports when "
        "none of them runs on the target: no cubin of the same major version and an equal or lower minor, and no "
        "PTX at or below the target's capability. Names the official wheel variant that does ship the target."
    )
    why = (
        "A cubin runs only on its own major version, from its minor up [S1]. Since torch 2.8 a plain "
        "`pip install torch` gets cu128 wheels without Maxwell and Pascal, and since 2.11 cu130 wheels without "
        "Volta [S29][S30][S31][S32]; only the cu126 variant still ships sm_50/sm_60/sm_70. Such a build imports "
        "fine and then fails at the first kernel launch with `no kernel image is available for execution on the "
        "device` [S34], after an import-time warning that the card 'is not compatible with the current PyTorch "
        "installation' [S1]."
    )
    fix_safety = (
        "No autofix: reinstalling torch changes the environment. The suggested command keeps the installed torch "
        "release where a fitting variant of it exists; reinstall torchvision/torchaudio from the same index."
    )
    sources = ("S1", "S29", "S30", "S31", "S32", "S34")
    prevents = ("E1", "E2")

    bad = (
        Bad(_P40_CU128, path="env.toml"),
        Bad('[torch]\nversion = "2.11.0+cu130"\ncuda = "13.0"\narches = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]\n',
            target="sm70", path="env.toml"),
        # torch could not be asked: the plain PyPI 2.9 wheel is cu128 (7.0+), no kernels for Pascal.
        Bad('[torch]\nversion = "2.9.1"\ncuda = "12.8"\narches_from = "table"\nproblem = "timed out"\n', path="env.toml"),
        Bad('[torch]\nversion = "2.6.0+cu126"\ncuda = "12.6"\narches = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]\n',
            target="sm120", path="env.toml"),
    )
    good = (
        Good('[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\narches = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]\n',
             path="env.toml"),
        Good(_P40_CU128, target="sm89", path="env.toml"),  # runs the sm_86 cubin
        Good('[torch]\nversion = "2.11.0+cu130"\ncuda = "13.0"\narches = ["sm_75", "sm_80", "sm_120", "compute_120"]\n',
             target="sm121", path="env.toml"),  # PTX
        Good('[torch]\nversion = "2.13.0+cpu"\n', path="env.toml"),  # CPU-only: RLC502's business
        Good("", path="env.toml"),  # no torch
    )

    def check(self, env):
        torch = env.torch
        if torch is None or torch.cuda is None:
            return []
        arches = torch.arches
        inferred = False
        if not arches:
            variant = torch_wheels.variant(torch.version)
            if variant is None:
                return []
            arches, inferred = variant.arches, True
        cc = self.target.capability
        if torch_wheels.runnable_arches(arches, cc):
            return []
        how = " (inferred from its version: torch itself could not be asked)" if inferred else ""
        message = (f"torch {torch.version} is built for {' '.join(arches)}{how}: nothing runs on "
                   f"{self.where()}")
        fitting = torch_wheels.wheel_for_target(torch.version, cc)
        if fitting is None:
            remedy = (f"no official torch wheel ships {self.target.name}: build torch from source with "
                      f"TORCH_CUDA_ARCH_LIST={self.target.capability_text}")
        else:
            requirement, variant = fitting
            remedy = (f"install the {variant.tag} wheel: pip install '{requirement}' --index-url "
                      f"{torch_wheels.index_url(variant.tag)} (torchvision/torchaudio from the same index)")
        return [self.finding(message, error="E1", remedy=remedy, package=env.package("torch"))]
