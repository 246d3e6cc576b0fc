from __future__ import annotations

from rlcompat.knowledge import versions
from rlcompat.contract import Bad, below, Good, PackageRequirementRule


class FlashAttnUnsupportedGpu(PackageRequirementRule):
    code = "RLC503"
    name = "flash-attn-unsupported-gpu"
    title = "flash-attn (FlashAttention 2) is installed on a GPU it cannot run on"
    what = (
        "Reports an installed `flash-attn` distribution when the target is below compute capability 8.0, and a "
        "flash-attn older than 2.7.4 on Blackwell (10.0+), whose wheels hold no kernels for it."
    )
    why = (
        "FlashAttention 2 refuses every GPU below Ampere (`FlashAttention only supports Ampere GPUs or newer.`) "
        "[S10] and its wheels are built for sm80+ only [S12][S9]. Being installed is what makes it harmful: "
        "transformers' `is_flash_attn_2_available()` and verl select `flash_attention_2` whenever the package "
        "imports, so the run fails inside the first attention call instead of falling back to SDPA. Wheels before "
        "2.7.4 hold sm80 and sm90 code only, so Blackwell gets `no kernel image` (inferred from [S12])."
    )
    fix_safety = (
        "No autofix. Uninstalling is safe where the code falls back to SDPA or eager attention; code that imports "
        "flash_attn unconditionally then fails to import (`rlcompat scan`, RLC203, finds those imports)."
    )
    sources = ("S9", "S10", "S12")
    prevents = ("E8", "E1")
    package_name = "flash-attn"

    bad = (
        Bad('[packages]\nflash-attn = "2.8.3"\n', path="env.toml"),
        Bad('[packages]\nflash_attn = "2.7.4.post1"\n', target="sm75", path="env.toml"),
        Bad('[packages]\nflash-attn = "2.6.3"\n', target="sm120", path="env.toml"),
    )
    good = (
        Good('[packages]\nflash-attn = "2.8.3"\n', target="sm80", path="env.toml"),
        Good('[packages]\nflash-attn = "2.8.3"\n', target="sm120", path="env.toml"),
        Good('[packages]\ntransformers = "4.57.0"\n', path="env.toml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        new_arch = cls.requirement()["new_arch"]["min_capability"]
        return super().applies_to(target) or not below(target.capability, new_arch)

    def check(self, env):
        found = super().check(env)
        pkg = env.package(self.package_name)
        new_arch = self.requirement()["new_arch"]
        if (pkg is not None and not found and not below(self.target.capability, new_arch["min_capability"])
                and versions.release(pkg.version) < versions.release(new_arch["min_version"])):
            found.append(self.finding(
                f"{pkg.name} {pkg.version} has no kernels for {self.where()}: wheels before "
                f"{new_arch['min_version']} are built for sm80 and sm90 only",
                error=new_arch["error"], package=pkg,
                remedy=f"upgrade: pip install 'flash-attn>={new_arch['min_version']}' --no-build-isolation"))
        return found

    def remedy(self, pkg, failing):
        return ("uninstall it: pip uninstall -y flash-attn; then use attn_implementation=\"sdpa\" (verl: "
                "+actor_rollout_ref.model.override_config.attn_implementation=sdpa; `rlcompat fix` rewrites the code)")
