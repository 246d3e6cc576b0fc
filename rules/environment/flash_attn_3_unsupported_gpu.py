from __future__ import annotations

from rlcompat.contract import Bad, Good, PackageRequirementRule


class FlashAttn3UnsupportedGpu(PackageRequirementRule):
    code = "RLC504"
    name = "flash-attn-3-unsupported-gpu"
    title = "flash-attn-3 (FlashAttention 3, Hopper) is installed on a GPU below 9.0"
    what = "Reports an installed `flash-attn-3` (the `flash_attn_3` / `flash_attn_interface` modules) below capability 9.0."
    why = (
        "FlashAttention 3 targets H100/H800 (`sm_90a`) [S9][S13]; transformers enables `flash_attention_3` only on "
        "capability 9.0+ and raises `Flash Attention 3 requires compute capability >= 9.0` otherwise [S15]."
    )
    fix_safety = "No autofix. Uninstalling is safe: without it transformers falls back to the implementation you select."
    sources = ("S9", "S13", "S15")
    prevents = ("E10",)
    package_name = "flash-attn-3"

    bad = (Bad('[packages]\nflash_attn_3 = "3.0.0b1"\n', target="sm86", path="env.toml"),)
    good = (Good('[packages]\nflash-attn-3 = "3.0.0b1"\n', target="sm90", path="env.toml"), Good("", path="env.toml"))

    def remedy(self, pkg, failing):
        return "uninstall it: pip uninstall -y flash-attn-3; use attn_implementation=\"sdpa\""

