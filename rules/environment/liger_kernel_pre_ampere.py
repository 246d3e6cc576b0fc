from __future__ import annotations

from rlcompat.contract import Bad, Good, PackageRequirementRule


class LigerKernelPreAmpere(PackageRequirementRule):
    code = "RLC508"
    name = "liger-kernel-pre-ampere"
    title = "liger-kernel is installed on a GPU below 8.0"
    what = "Reports an installed `liger-kernel` below compute capability 8.0 (a warning: it matters once enabled)."
    why = (
        "Liger's kernels are all Triton, with Triton's own limits: below 8.0 Triton is not officially supported "
        "(on Pascal `tl.dot` mostly fails) and kernels in bf16 stop in ptxas with `Feature '.bf16' requires "
        ".target sm_80 or higher` [S37][S43]. verl uses it when `use_liger=True`."
    )
    fix_safety = "No autofix: keep `use_liger` off (verl's default) or uninstall the package."
    sources = ("S37", "S43")
    prevents = ("E7",)
    severity = "warning"
    package_name = "liger-kernel"

    bad = (Bad('[packages]\nliger-kernel = "0.6.2"\n', target="sm75", path="env.toml"),)
    good = (Good('[packages]\nliger_kernel = "0.6.2"\n', target="sm86", path="env.toml"),)

    def remedy(self, pkg, failing):
        return "keep actor_rollout_ref.model.use_liger=False (verl's default) or pip uninstall -y liger-kernel"
