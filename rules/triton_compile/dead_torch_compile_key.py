from __future__ import annotations

from rlcompat.analysis.deadkeys import report_dead_keys
from rlcompat.contract import Bad, ConfigRule, Good, VERL_091

CMD = "python3 -m verl.trainer.main_ppo \\\n    {extra} \\\n    trainer.n_gpus_per_node=1\n"


class DeadTorchCompileKey(ConfigRule):
    code = "RLC352"
    name = "dead-torch-compile-key"
    title = "`actor.use_torch_compile` set for verl's FSDP engine, which never reads it"
    what = (
        "Finds `actor_rollout_ref.actor.use_torch_compile` and `actor_rollout_ref.ref.use_torch_compile` in launch "
        "scripts and configs. In verl 0.9.1 the FSDP engine reads `fsdp_config.use_torch_compile`; the role-level key "
        "is declared and never read [S51]."
    )
    why = (
        "`actor_rollout_ref.actor.use_torch_compile=False` is the switch people find in older examples; with it the "
        "engine still compiles, and Inductor refuses compute capability < 7.0 [S17]."
    )
    fix_safety = "In a script the key is renamed to `...fsdp_config.use_torch_compile`, keeping the value: safe."
    severity = "warning"
    names = ("use_torch_compile",)
    sources = ("S17", "S51")

    bad = (
        Bad(CMD.format(extra="actor_rollout_ref.actor.use_torch_compile=False"), path="run.sh",
            fixed=CMD.format(extra="actor_rollout_ref.actor.fsdp_config.use_torch_compile=False"), frameworks=VERL_091),
        Bad("# oc.select: the default val for ref.use_torch_compile\nuse_torch_compile: true\n",
            path="verl/trainer/config/actor/actor.yaml"),
    )
    good = (
        Good(CMD.format(extra="actor_rollout_ref.actor.fsdp_config.use_torch_compile=False"), path="run.sh"),
        Good(CMD.format(extra="actor_rollout_ref.actor.use_torch_compile=False"), path="run.sh", target="sm80"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.inductor

    def check_config(self, view, ctx) -> None:
        report_dead_keys(view, ctx, suffix=".use_torch_compile", value_map=lambda v: v)
