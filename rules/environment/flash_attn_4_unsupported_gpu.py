from __future__ import annotations

from rlcompat.contract import Bad, Good, PackageRequirementRule



class FlashAttn4UnsupportedGpu(PackageRequirementRule):
    code = "RLC505"
    name = "flash-attn-4-unsupported-gpu"
    title = "flash-attn-4 (FlashAttention 4, CuTe DSL) is installed on a GPU it cannot train on"
    what = "Reports an installed `flash-attn-4` below capability 9.0, where its backward pass refuses the GPU."
    why = (
        "FlashAttention 4's forward accepts capability 8.x-12.x but its backward only 9.x-12.x, asserting "
        "`Unsupported compute capability. Supported: 9.x, 10.x, 11.x, 12.x` [S14]: RL training needs the backward."
    )
    fix_safety = "No autofix. Uninstalling is safe where the code falls back to SDPA."
    sources = ("S14",)
    prevents = ("E12",)
    package_name = "flash-attn-4"

    bad = (Bad('[packages]\nflash-attn-4 = "4.0.0"\n', target="sm80", path="env.toml"),)
    good = (Good('[packages]\nflash-attn-4 = "4.0.0"\n', target="sm100", path="env.toml"),)

    def remedy(self, pkg, failing):
        return "uninstall it: pip uninstall -y flash-attn-4; use attn_implementation=\"sdpa\""
