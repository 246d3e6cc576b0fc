from __future__ import annotations

from rlcompat.analysis.confighelpers import ENTRY_TRIGGERS
from rlcompat.analysis.launch_path import of_view
from rlcompat.contract import Bad, ConfigRule, Edit, FixSafety, Good, VERL_091

CMD = "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=gae \\\n    {extra} \\\n    trainer.n_gpus_per_node=1\n"


class HydraRefusedOverride(ConfigRule):
    code = "RLC004"
    name = "hydra-refused-override"
    title = "Launch-command override of a key the config it composes does not have: Hydra stops the run at start"
    what = (
        "Finds `key=value` overrides (no `+`) on a verl command for keys the config the command composes does not "
        "have, where the verl the script runs is exactly a release rlcompat knows: the tree's own package or the "
        "installed one, whose config (ppo_trainer.yaml, or the one `--config-path`/`--config-name` name) is composed "
        "as Hydra composes it; for a pinned release not on disk, only keys its knowledge proves absent. Typical: "
        "`critic.model.fsdp_config.*`, written for verl 0.7 and older, which verl 0.9.1 has at `critic.fsdp` [S164]."
    )
    why = (
        "Hydra composes the config in struct mode and refuses an override of a key it lacks, `{}` mappings "
        "included, before any code runs: `Could not override 'K'. To append to your config use +K=...` [S164]. "
        "The run never starts on any GPU, so a script that sets such a key is not clean. `+key=` (adds), "
        "`++key=` and `~key` are Hydra's own ways to add or delete and are not reported; nor is a key without a "
        "dot (it may choose a config group), one written through a shell expansion, or anything of a fork or a "
        "config rlcompat cannot compose. (Hydra also refuses `+key=` for a key the config already has, `Could not "
        "append to config`; this rule does not report that.)"
    )
    fix_safety = (
        "Where knowledge proves how this release spells the same setting (the same setting id and role in another "
        "release's knowledge, or the same config-group file mounted for the same role elsewhere) and the composed "
        "config has that key, the key is renamed to it: safe, the value then takes effect as it was meant to. "
        "Otherwise no fix: remove the override, or write `+key=` if code of your own reads it."
    )
    languages = frozenset({"shell"})
    triggers = ENTRY_TRIGGERS
    sources = ("S164",)

    bad = (
        Bad(CMD.format(extra="critic.model.fsdp_config.param_offload=True"), path="run.sh",
            fixed=CMD.format(extra="critic.fsdp.param_offload=True"), frameworks=VERL_091),
        Bad(CMD.format(extra="trainer.use_legacy_worker_impl=auto"), path="run.sh", frameworks=VERL_091),
    )
    good = (
        Good(CMD.format(extra="critic.fsdp.param_offload=True"), path="run.sh", frameworks=VERL_091),
        Good(CMD.format(extra="+critic.model.fsdp_config.param_offload=True"), path="run.sh", frameworks=VERL_091),
        Good(CMD.format(extra="~trainer.use_legacy_worker_impl"), path="run.sh", frameworks=VERL_091),
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
            if refusal.spelled and view.get(refusal.spelled) is None:
                edit = Edit(setting.key_span.start, setting.key_span.end, refusal.spelled)
                ctx.report(setting.key_span, refusal.message(), [edit], FixSafety.SAFE, f"use {refusal.spelled}")
            else:
                ctx.report(setting.key_span, refusal.message())
