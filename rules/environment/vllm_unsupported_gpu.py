from __future__ import annotations

from rlcompat.doctor.rule import PackageRequirementRule
from rlcompat.rule import Bad, Good


class VllmUnsupportedGpu(PackageRequirementRule):
    code = "RLC506"
    name = "vllm-unsupported-gpu"
    title = "vLLM is installed for rollout on a GPU it does not support"
    what = (
        "Reports an installed `vllm` below compute capability 7.0 (error: no vLLM release supports it) and, for "
        "releases after v0.14.0, from 7.0 to 7.4 (warning: documented for 7.0+ up to v0.14.0, 7.5+ since)."
    )
    why = (
        "vLLM's installation docs require capability 7.0+ up to v0.14.0 and 7.5+ since [S7]; its kernels are not "
        "built for older cards. Below 8.0 it also refuses bf16 (`Bfloat16 is only supported on GPUs with compute "
        "capability of at least 8.0`) [S6], and bf16 is verl's default rollout dtype."
    )
    fix_safety = (
        "No autofix. Below 7.0 no vLLM runs: roll out elsewhere or with transformers (verl 0.9.1's trainer has no "
        "Hugging Face rollout engine, see RLC513); on 7.x pin a release that still supports the card and set the "
        "rollout dtype to float16."
    )
    sources = ("S6", "S7")
    prevents = ("E1", "E4")
    package_name = "vllm"

    bad = (
        Bad('[packages]\nvllm = "0.11.0"\n', path="env.toml"),
        Bad('[packages]\nvllm = "0.17.0"\n', target="sm70", path="env.toml"),
    )
    good = (
        Good('[packages]\nvllm = "0.11.0"\n', target="sm75", path="env.toml"),
        Good('[packages]\nvllm = "0.14.0"\n', target="sm70", path="env.toml"),
        Good('[packages]\nsglang = "0.5.2"\n', target="sm90", path="env.toml"),
    )

    def remedy(self, pkg, failing):
        if failing:
            return ("no vLLM release runs on this card: pip uninstall -y vllm and generate with transformers "
                    "(as `rlcompat verify` does), or run the rollout on a 7.5+ card")
        return ("pin a vLLM that still supports the card (its docs for v0.14.0 list 7.0+) and set "
                "actor_rollout_ref.rollout.dtype=float16")
