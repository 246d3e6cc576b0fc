from __future__ import annotations

from rlcompat.knowledge import vllm_pascal
from rlcompat.knowledge.capabilities import last_release_that_runs, min_capability
from rlcompat.contract import Bad, Good, PackageRequirementRule

_VLLM = min_capability("vllm")


class VllmUnsupportedGpu(PackageRequirementRule):
    code = "RLC506"
    name = "vllm-unsupported-gpu"
    title = "vLLM is installed for rollout on a GPU it does not support"
    what = (
        "Reports an installed `vllm` release on a card below that release's minimum compute capability "
        "(rlcompat/knowledge/data/capabilities.toml, per release: the same table `scan`'s RLC401/RLC407/RLC413 read for the current "
        f"release): {_VLLM.by_release()}. Not where `vllm-pascal` is installed on a card its builds are for: there "
        "the `vllm` distribution is the stand-in that community build needs, and its kernels are for the card [S95][S96]."
    )
    why = (
        f"{_VLLM.by_release()}: its installation docs say so and its wheels hold kernels for no older card "
        "[S7]. Below 8.0 it also refuses bf16 (`Bfloat16 is only supported on GPUs with compute capability of at "
        "least 8.0`) [S6], and bf16 is verl's default rollout dtype."
    )
    fix_safety = (
        "No autofix. Where no vLLM release runs: roll out elsewhere or with transformers (verl 0.9.1's trainer has no "
        "Hugging Face rollout engine, see RLC513); where an older release still does (a V100), pin it and set the "
        "rollout dtype to float16."
    )
    sources = ("S6", "S7", "S95", "S96")
    prevents = ("E1", "E4")
    package_name = "vllm"

    bad = (
        Bad('[packages]\nvllm = "0.11.0"\n', path="env.toml"),
        Bad('[packages]\nvllm = "0.20.0"\n', target="sm70", path="env.toml"),
    )
    good = (
        Good('[packages]\nvllm = "0.11.0"\n', target="sm75", path="env.toml"),
        Good('[packages]\nvllm = "0.19.1"\n', target="sm70", path="env.toml"),
        Good('[packages]\nsglang = "0.5.2"\n', target="sm90", path="env.toml"),
        Good('[packages]\nvllm = "0.9.1"\nvllm-pascal = "0.9.1"\n', path="env.toml"),
    )

    def check(self, env):
        if env.package(vllm_pascal.table().package) is not None and vllm_pascal.built_for(self.target):
            return []  # vllm-pascal's stand-in `vllm`: the kernels installed are the community build's, for this card
        return super().check(env)

    def remedy(self, pkg, failing):
        older = last_release_that_runs("vllm", self.target)
        if older:
            return (f"pip install 'vllm<={older}' (the last release built for {self.target.capability_text}) and set "
                    "actor_rollout_ref.rollout.dtype=float16")
        return ("no vLLM release runs on this card: pip uninstall -y vllm and generate with transformers "
                f"(as `rlcompat verify` does), or run the rollout on a {_VLLM.text}+ card")
