from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.analysis.confighelpers import remove_flag
from rlcompat.analysis.guarded_reads import read_only_while_off
from rlcompat.analysis.interpolation import select_default
from rlcompat.analysis.verlengines import report_engine_settings
from rlcompat.analysis.knowledge_keys import RESOLVED_ORIGINS, negated_switch
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good, VERL_091
from rlcompat.rules.attention.helpers import FLASH_SWITCH_FIELDS
from rlcompat.knowledge.spellings import flash_attention

CMD = "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n    {extra}trainer.n_gpus_per_node=1\n"
KEY = "actor_rollout_ref.model.override_config.attn_implementation"


class FlashAttentionSetting(ConfigRule):
    code = "RLC204"
    name = "flash-attention-setting"
    title = "FlashAttention chosen in a config, a Hydra override or a CLI flag on a GPU it does not support"
    what = (
        "Finds `attn_implementation: flash_attention_2|3` at any depth of a YAML config, as a Hydra override or as "
        "`--attn_implementation` flag; OpenRLHF's `--flash_attn`; verl's Megatron engine `attention_backend: flash`; "
        "a config class field `flash_attn: bool = True`; and verl launch scripts that do not set "
        "`override_config.attn_implementation`, whose default in verl is flash_attention_2 [S51]; in verl's own "
        "model configs, an `override_config` mapping that leaves it out where the version's knowledge proves it "
        "(`omitted_in`: verl 0.6.1's and 0.7.0's `override_config: {}`). A YAML key the tree's own Python reads only "
        "while a sibling holds given values, where the file sets that sibling otherwise (HALOs' `reward_model.dtype: "
        "float32` beside its `attn_implementation`), reaches no run and is left alone."
    )
    why = (
        "FlashAttention-2 needs compute capability 8.0 (`FlashAttention only supports Ampere GPUs or newer.`) [S10]; "
        "FlashAttention-3 needs Hopper [S9]. verl's remove-padding path and transformers both call it only at the "
        "first forward pass, after minutes of setup."
    )
    fix_safety = (
        "`sdpa` (PyTorch's scaled-dot-product attention, memory-efficient kernel on pre-Ampere [S16]) computes the same "
        "attention: safe. In a verl script the override is added with `++`. `--flash_attn` is removed (OpenRLHF then "
        "uses its default attention). verl's Megatron `attention_backend: flash` becomes `unfused` (Megatron's "
        "plain PyTorch attention, one of the choices engine/megatron.yaml lists): the same attention, but it "
        "materialises the attention matrix and needs more memory, so the fix is unsafe."
    )
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    names = ("flash_attention_", "flash_attn", "flash-attn")
    config_names = ("attention_backend",)  # verl's Megatron engine key
    verl_commands = True  # a verl launch command that leaves attn_implementation at flash_attention_2
    # the mapping verl's own model configs leave attn_implementation out of (`override_config: {}`)
    verl_omitted = ("attn-implementation",)
    sources = ("S9", "S10", "S16", "S51")

    bad = (
        Bad(CMD.format(extra=""), path="run.sh",
            fixed=CMD.format(extra="").replace("=1\n", f"=1 \\\n    ++{KEY}=sdpa\n"), frameworks=VERL_091),
        Bad(CMD.format(extra=f"+{KEY}=flash_attention_2 \\\n    "), path="run.sh",
            fixed=CMD.format(extra=f"+{KEY}=sdpa \\\n    ")),
        Bad("# attention implementation\nattn_implementation: flash_attention_2\n",
            fixed="# attention implementation\nattn_implementation: sdpa\n", path="verl/trainer/config/engine/veomni.yaml"),
        Bad("model_name_or_path: Qwen/Qwen2.5-7B\nattn_implementation: \"flash_attention_2\"\n",
            fixed="model_name_or_path: Qwen/Qwen2.5-7B\nattn_implementation: \"sdpa\"\n", path="trl.yaml"),
        Bad("accelerate launch train_grpo.py --attn_implementation flash_attention_2 --lr 1e-6\n",
            fixed="accelerate launch train_grpo.py --attn_implementation sdpa --lr 1e-6\n", path="run.sh"),
        Bad("deepspeed --module openrlhf.cli.train_ppo_ray \\\n   --flash_attn \\\n   --zero_stage 2\n",
            fixed="deepspeed --module openrlhf.cli.train_ppo_ray \\\n   --zero_stage 2\n", path="run.sh"),
        Bad("override_transformer_config:\n  attention_backend: flash\n", unsafe=True,
            fixed="override_transformer_config:\n  attention_backend: unfused\n", path="verl/trainer/config/engine/megatron.yaml"),
        # a command that selects the Megatron engine and leaves its backend at verl's default (and the HF override)
        Bad("python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer algorithm.adv_estimator=grpo "
            "+actor_rollout_ref.model.override_config.attn_implementation=sdpa "
            "actor_rollout_ref.ref.megatron.override_transformer_config.attention_backend=fused\n",
            unsafe=True, path="run.sh",
            fixed="python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer algorithm.adv_estimator=grpo "
            "+actor_rollout_ref.model.override_config.attn_implementation=sdpa "
            "actor_rollout_ref.ref.megatron.override_transformer_config.attention_backend=fused "
            "actor_rollout_ref.actor.megatron.override_transformer_config.attention_backend=unfused\n",
            frameworks=VERL_091),
        # An OmegaConf interpolation is judged by the default it takes while the followed key is unset.
        Bad("attn_implementation: ${oc.select:actor_rollout_ref.actor.veomni.attn_implementation,flash_attention_2}\n",
            fixed="attn_implementation: ${oc.select:actor_rollout_ref.actor.veomni.attn_implementation,sdpa}\n",
            path="verl/trainer/config/ref/veomni_ref.yaml"),
        # a recipe's own config class whose `flash_attn` switch (OpenRLHF's `--flash_attn`) defaults to on
        Bad("@dataclass\nclass PPOExpConfig:\n    packing: bool = True\n    flash_attn: bool = True\n",
            fixed="@dataclass\nclass PPOExpConfig:\n    packing: bool = True\n    flash_attn: bool = False\n", path="exp.py"),
    )
    good = (
        Good(CMD.format(extra=f"+{KEY}=sdpa \\\n    "), path="run.sh"),
        Good(CMD.format(extra=""), path="run.sh", target="sm80"),
        Good("attn_implementation: flash_attention_3\n", path="c.yaml", target="sm90"),
        Good("attn_implementation: eager\n", path="c.yaml"),
        Good("attn_implementation: ${oc.select:actor_rollout_ref.actor.veomni.attn_implementation,sdpa}\n", path="c.yaml"),
        Good("actor:\n  attn_implementation: sdpa\nref:\n  attn_implementation: ${oc.select:actor.attn_implementation,flash_attention_2}\n",
             path="c.yaml"),
        Good("@dataclass\nclass PPOExpConfig:\n    flash_attn: bool = False\n", path="exp.py"),
        Good("class Model:\n    _supports_flash_attn = True\n", path="modeling.py"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_3

    def _bad(self, value: str, target) -> bool:
        return value in flash_attention(3).implementations or (
            value in flash_attention(2).implementations and not target.flash_attn_2)

    def check_config(self, view, ctx) -> None:
        target = ctx.target

        def describe(key: str, value: str, origin: str) -> str:
            needs = "FlashAttention-3 needs Hopper (9.0)" if value in flash_attention(3).implementations else "FlashAttention-2 needs compute capability 8.0+"
            return f"{key} is {value}{origin}: {needs}, {target.name} is {target.capability_text}; use sdpa"

        h.set_or_add(view, ctx, "attn-implementation", lambda v: self._bad(v, target),
                     lambda v: ("sdpa", FixSafety.SAFE), describe, roles=("actor", "critic"))
        # verl's Megatron engine: override_transformer_config.attention_backend (rlcompat/knowledge/data/verl/*.toml, `engine`)
        report_engine_settings(view, ctx, "engine-attention-backend",
                               lambda v: v.strip().lower() == "flash" and not target.flash_attn_2,
                               lambda v: ("unfused", FixSafety.UNSAFE),
                               lambda key, v: f"Megatron's flash backend is FlashAttention, which needs compute "
                                              f"capability 8.0+, {target.name} is {target.capability_text}")
        known = {k.key for k in ctx.verl.by_id("attn-implementation")}
        generic = view.by_name("attn_implementation", "_attn_implementation") + view.flags(
            "--attn_implementation", "--attn-implementation")
        for s in generic:
            if s.origin in RESOLVED_ORIGINS:
                continue  # forced or defaulted by the framework's own code: RLC207 reports it, with its condition
            s = s if s.flag else select_default(view, s)  # `${oc.select:KEY,flash_attention_2}`: its default
            if s is None or not s.flag and known & set(view.paths_of(s)) or s.value is None or not self._bad(s.value, target):
                continue
            if not s.flag and read_only_while_off(view, ctx, s):
                continue  # the tree's code takes it only while a sibling this file sets otherwise holds (HALOs' reward model)
            ctx.report(s.key_span, describe(s.label if s.flag else view.full_key(s), s.value, h.where(s)),
                       [s.rewrite("sdpa")], FixSafety.SAFE, "use sdpa")
        if not target.flash_attn_2:
            # A config class's own switch (`flash_attn: bool = True`, the field behind OpenRLHF-style `--flash_attn`):
            # its default turns FlashAttention-2 on for every run that builds the class without setting it.
            for s in view.by_name(*FLASH_SWITCH_FIELDS):
                if s.origin == "python-field" and s.as_bool() is True:
                    ctx.report(s.key_span, f"{s.call + '.' if s.call else ''}{s.key} defaults to True: it turns on "
                                           f"FlashAttention-2, which needs compute capability 8.0+; {target.name} is "
                                           f"{target.capability_text}: set it to False",
                               [s.rewrite(False)], FixSafety.SAFE, "set it to False")
            for s in view.flags("--flash_attn", "--flash-attn"):
                if s.value and s.as_bool() is False or s.origin in RESOLVED_ORIGINS:
                    continue  # off, or forced by the framework's own code (RLC207 reports that, with its condition)
                if negated_switch(view, ctx, s) is not None:
                    continue  # on by default in its framework (oat's tyro flags): RLC207 writes the off flag
                edit = remove_flag(ctx.source_text, s.word_span) if s.word_span else None
                ctx.report(s.key_span, f"{s.label} turns on FlashAttention-2, which needs compute capability 8.0+; "
                                       f"{target.name} is {target.capability_text}: drop the flag", [edit],
                           FixSafety.SAFE, f"remove {s.label}")
