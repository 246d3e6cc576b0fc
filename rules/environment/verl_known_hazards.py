from __future__ import annotations

from rlcompat.knowledge import versions
from rlcompat.knowledge.environment import environment_facts
from rlcompat.contract import Bad, below, EnvironmentRule, fix_command, Good


def _patched(env, pkg, file: str) -> bool:
    """Whether `rlcompat fix --installed verl` patched `file` of this very install and the patch is still there."""
    return any(p.dist == "verl" and p.state == "applied" and p.patched_version == pkg.version and file in p.patched
               for p in env.installed_patches)


def _hazards(version: str, target) -> list[dict]:
    return [h for h in environment_facts()["verl"]
            if versions.version_in(version, h["min"], h["below"]) and below(target.capability, h["min_capability_ok"])]


class VerlKnownHazards(EnvironmentRule):
    code = "RLC513"
    name = "verl-known-hazards"
    title = "The installed verl release has known hazards on the target GPU"
    what = (
        "Reports, for the installed verl release, the hazards rlcompat/knowledge/data/environment.toml lists for it below the "
        "capability they need: the critic loader that hard-codes flash_attention_2, and flash-attention/bf16/"
        "torch.compile defaults."
    )
    why = (
        "verl's defaults are `attn_implementation=flash_attention_2`, bf16 actor/ref/rollout and "
        "`use_torch_compile=true` [S40]; config overrides fix most of them, but `load_valuehead_model` passes "
        "`attn_implementation=\"flash_attention_2\"` unconditionally (verl 0.9.1 `utils/model.py:649,674`), so PPO "
        "with a critic fails on a card without flash-attn whatever the config says [S40][S50]. verl 0.9.1's trainer "
        "also registers only the vLLM, SGLang and TensorRT-LLM rollout engines [S50], which need capability 7.0+ "
        "[S7][S35], so below 7.0 `main_ppo` has no rollout engine of its own: rlcompat's `hf` rollout (rlcompat's `verl` "
        "extra, `actor_rollout_ref.rollout.name=hf`) is registered through verl's plugin entry point; "
        "where it is installed (its `verl.plugins` entry point, read from package metadata) that is not a finding."
    )
    fix_safety = (
        "No autofix here: `rlcompat fix --installed verl --target TARGET` rewrites the places in the installed verl "
        "that have a safe fix (attention implementation, bf16 dtypes), keeping the originals for `rlcompat restore "
        "verl`; once that patch holds `verl/utils/model.py`, the critic's hazard is no longer reported."
    )
    sources = ("S40", "S50", "S7", "S35")
    prevents = ("X4", "E11", "E8", "X6")

    bad = (
        Bad('[packages]\nverl = "0.9.1"\n', path="env.toml"),
        Bad('verl_plugins = ["rlcompat.verl_plugin.entry"]\n[packages]\nverl = "0.9.1"\n', path="env.toml"),
        Bad('[packages]\nverl = "0.9.1"\nflash-attn = "2.8.3"\n', target="sm75", path="env.toml"),
    )
    good = (
        Good('[packages]\nverl = "0.9.1"\n', target="sm80", path="env.toml"),
        Good('[packages]\nverl = "0.3.0"\n', path="env.toml"),
        Good('[packages]\nverl = "0.9.1"\nflash-attn = "2.8.3"\n', target="sm90", path="env.toml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return any(below(target.capability, h["min_capability_ok"]) for h in environment_facts()["verl"])

    def check(self, env):
        pkg = env.package("verl")
        if pkg is None:
            return []
        out = []
        for h in _hazards(pkg.version, self.target):
            if h["hazard"] == "no-rollout-engine":
                out += self._rollout(env, pkg, h)
                continue
            if h.get("file") and _patched(env, pkg, h["file"]):
                continue
            out.append(self.finding(
                f"verl {pkg.version} on {self.where()}: {h['what']}", package=pkg,
                error=h.get("error_with_flash_attn", h["error"]) if env.package("flash-attn") else h["error"],
                remedy=(f"fix the installed verl, keeping its originals: `{fix_command('verl', self.target.name)}` "
                        "(`rlcompat restore verl` undoes it)")))
        return out

    def _rollout(self, env, pkg, hazard) -> list:
        """No engine verl registers runs here: rlcompat's hf rollout does (rlcompat/knowledge/hf_rollout.py, the advice RLC401
        gives). Installed for a verl it supports, nothing is wrong: doctor's rollout section names the override."""
        from rlcompat.knowledge import hf_rollout
        from rlcompat.knowledge.verl_config import knowledge_for

        knowledge, _ = knowledge_for(pkg.version)
        supported = knowledge is not None and hf_rollout.supports(knowledge)
        if supported and hf_rollout.plugin_among(env.verl_plugins, True):
            return []
        remedy = (hf_rollout.advice(knowledge, available=False) + " (same algorithm, slower than vLLM)" if supported
                  else f"rlcompat's hf rollout supports verl {', '.join(hf_rollout.SUPPORTED_VERL)} only: install one "
                       "of those, or run the rollout on a 7.5+ card")
        return [self.finding(f"verl {pkg.version} on {self.where()}: {hazard['what']}", package=pkg,
                             error=hazard["error"], name="hf", remedy=remedy)]
