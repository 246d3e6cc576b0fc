from __future__ import annotations

from rlcompat.contract import Bad, Good, PackageRequirementRule


class SglangUnsupportedGpu(PackageRequirementRule):
    code = "RLC507"
    name = "sglang-unsupported-gpu"
    title = "SGLang is installed for rollout on a GPU it does not support"
    what = "Reports an installed `sglang` below compute capability 7.5 (error) and from 7.5 to 7.9 (warning)."
    why = (
        "SGLang raises `SGLang only supports sm75 and above.` on older cards, and several sgl-kernel ops are "
        "compiled for sm80+ only, so on a T4 it fails with `no kernel image is available` inside ops such as "
        "GemmaRMSNorm [S35]."
    )
    fix_safety = "No autofix: switch the rollout engine (verl: actor_rollout_ref.rollout.name=vllm on 7.0+) or the GPU."
    sources = ("S35",)
    prevents = ("E19", "E20")
    package_name = "sglang"

    bad = (
        Bad('[packages]\nsglang = "0.5.2"\n', path="env.toml"),
        Bad('[packages]\nsglang = "0.5.2"\n', target="sm75", path="env.toml"),
    )
    good = (Good('[packages]\nsglang = "0.5.2"\n', target="sm80", path="env.toml"), Good("", path="env.toml"))

    def remedy(self, pkg, failing):
        if failing:
            return ("pip uninstall -y sglang; on 7.0+ use actor_rollout_ref.rollout.name=vllm with "
                    "actor_rollout_ref.rollout.dtype=float16, below that generate with transformers")
        return "use actor_rollout_ref.rollout.name=vllm with actor_rollout_ref.rollout.dtype=float16"
