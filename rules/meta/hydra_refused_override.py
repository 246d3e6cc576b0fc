from __future__ import annotations

from rlcompat.analysis.launch_path import of_view
from rlcompat.contract import Bad, ConfigRule, Edit, FixSafety, Good, VERL_091

CMD = "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=gae \\\n    {extra} \\\n    trainer.n_gpus_per_node=1\n"


class HydraRefusedOverride(ConfigRule):
    code = "RLC004"
    name = "hydra-refused-override"
    title = ("Launch-command override Hydra refuses at start: a key the config it composes does not have, or `+key=` "
             "for one it has")
    what = (
        "Finds the overrides of a verl command that Hydra refuses, where the verl the script runs is exactly a "
        "release rlcompat knows (the tree's own package or the installed one, whose config, ppo_trainer.yaml or the "
        "one `--config-path`/`--config-name` name, is composed as Hydra composes it; for a pinned release not on "
        "disk, only what its knowledge proves): `key=value` (no `+`) for a key that config does not have, typically "
        "`critic.model.fsdp_config.*`, written for verl 0.7 and older, which verl 0.9.1 has at `critic.fsdp` "
        "[S164]; and `+key=value` for a key it already holds a value at, such as `+trainer.total_epochs=2` [S165]."
    )
    why = (
        "Hydra composes the config in struct mode and refuses an override of a key it lacks, `{}` mappings "
        "included, before any code runs: `Could not override 'K'. To append to your config use +K=...` [S164]. "
        "`+key=` adds a key, and where the key already holds a value (not null, not `???`) and the value added is "
        "no list or mapping, Hydra refuses that as well: `Could not append to config. An item is already at 'K'` "
        "[S165]. Either way the run never starts on any GPU, so a script that writes such an override is not "
        "clean. `++key=` (adds or sets) and `~key` (deletes) are never reported; nor is a key without a dot (it "
        "may choose a config group), one written through a shell expansion, a `+key=` after the command's own "
        "`~key` or setting of it, a value the composed config holds only through an interpolation, or anything of "
        "a fork or a config rlcompat cannot compose."
    )
    fix_safety = (
        "A `+key=` for a key the config holds a value at: the `+` is dropped (safe: `key=value` sets the key, which is "
        "what the override meant and what Hydra's own message proposes); where it holds a mapping, no fix (`key=value` "
        "would replace the whole mapping). A key the config lacks: where knowledge proves how "
        "this release spells the same setting (the same setting id and role in another release's knowledge, or the "
        "same config-group file mounted for the same role elsewhere) and the composed config has that key, the key "
        "is renamed to it: safe, the value then takes effect as it was meant to. Otherwise no fix: remove the "
        "override, or write `+key=` if code of your own reads it."
    )
    languages = frozenset({"shell", "dockerfile", "markdown"})  # wherever the shell front end reads commands
    verl_commands = True  # the overrides of verl launch commands
    sources = ("S164", "S165")

    bad = (
        Bad(CMD.format(extra="critic.model.fsdp_config.param_offload=True"), path="run.sh",
            fixed=CMD.format(extra="critic.fsdp.param_offload=True"), frameworks=VERL_091),
        Bad(CMD.format(extra="trainer.use_legacy_worker_impl=auto"), path="run.sh", frameworks=VERL_091),
        Bad(CMD.format(extra="+actor_rollout_ref.rollout.dtype=float16"), path="run.sh",
            fixed=CMD.format(extra="actor_rollout_ref.rollout.dtype=float16"), frameworks=VERL_091),
    )
    good = (
        Good(CMD.format(extra="critic.fsdp.param_offload=True"), path="run.sh", frameworks=VERL_091),
        Good(CMD.format(extra="+critic.model.fsdp_config.param_offload=True"), path="run.sh", frameworks=VERL_091),
        Good(CMD.format(extra="~trainer.use_legacy_worker_impl"), path="run.sh", frameworks=VERL_091),
        Good(CMD.format(extra="++actor_rollout_ref.rollout.dtype=float16"), path="run.sh", frameworks=VERL_091),
        Good(CMD.format(extra="+actor_rollout_ref.model.custom_chat_template=chatml"), path="run.sh",
             frameworks=VERL_091),
        Good(CMD.format(extra="--config-name=my_ppo critic.model.fsdp_config.param_offload=True"), path="run.sh",
             frameworks=VERL_091),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def check_config(self, view, ctx) -> None:
        found = of_view(view, ctx)
        for refusal in found.refusals if found is not None else ():
            setting = refusal.setting
            plus = setting.key_span.start - 1
            if refusal.held and not refusal.mapping and plus >= 0 and ctx.source_text[plus] == "+":
                # `key=value` sets the key the config has: what the `+` meant, and what Hydra's message proposes
                ctx.report(setting.key_span, refusal.message(), [Edit(plus, plus + 1, "")], FixSafety.SAFE,
                           "drop the `+`")
            elif refusal.held:
                ctx.report(setting.key_span, refusal.message())
            elif refusal.spelled and view.get(refusal.spelled) is None:
                edit = Edit(setting.key_span.start, setting.key_span.end, refusal.spelled)
                ctx.report(setting.key_span, refusal.message(), [edit], FixSafety.SAFE, f"use {refusal.spelled}")
            else:
                ctx.report(setting.key_span, refusal.message())
