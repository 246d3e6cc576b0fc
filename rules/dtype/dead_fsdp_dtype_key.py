from __future__ import annotations

from rlcompat.analysis.deadkeys import report_dead_keys
from rlcompat.contract import Bad, ConfigRule, Good, VERL_091

CMD = "python3 -m verl.trainer.main_ppo \\\n    {extra} \\\n    trainer.n_gpus_per_node=1\n"


class DeadFsdpDtypeKey(ConfigRule):
    code = "RLC106"
    name = "dead-fsdp-dtype-key"
    title = "`fsdp_config.dtype` set for verl's FSDP engine, which never reads it"
    what = (
        "Finds `fsdp_config.dtype` (actor, ref) and `critic.fsdp.dtype` in launch scripts and configs. In verl 0.9.1 "
        "only the Megatron engine reads `EngineConfig.dtype`; the FSDP engine takes its compute dtype from "
        "`mixed_precision.param_dtype` (defaulting to bf16) [S51]."
    )
    why = (
        "Changing it looks like a fix for bf16 on an old GPU and changes nothing: the run still computes in bf16, which "
        "compute capability < 8.0 only emulates [S1]."
    )
    fix_safety = (
        "In a script the override is renamed to `++...fsdp_config.mixed_precision.param_dtype` with the user's value "
        "(bf16 spellings become the target's dtype), which is what was meant: safe. In YAML no fix is offered; verl's own "
        "`engine/fsdp.yaml` is reported as a warning so that nobody edits the wrong key."
    )
    severity = "warning"
    names = ("dtype",)
    sources = ("S1", "S51")

    bad = (
        Bad(CMD.format(extra="actor_rollout_ref.actor.fsdp_config.dtype=float32"), path="run.sh",
            fixed=CMD.format(extra="++actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=float32"),
            frameworks=VERL_091),
        Bad(CMD.format(extra="actor_rollout_ref.ref.fsdp_config.dtype=bfloat16"), path="run.sh",
            fixed=CMD.format(extra="++actor_rollout_ref.ref.fsdp_config.mixed_precision.param_dtype=float32"),
            frameworks=VERL_091),
        Bad("# Mixed precision training param dtype\ndtype: bfloat16 # [\"bfloat16\", \"float16\"]\n",
            path="verl/trainer/config/engine/fsdp.yaml"),
    )
    good = (
        Good(CMD.format(extra="actor_rollout_ref.actor.megatron.dtype=float16"), path="run.sh"),
        Good(CMD.format(extra="+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32"), path="run.sh"),
        Good("dtype: bfloat16\n", path="verl/trainer/config/engine/megatron.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        report_dead_keys(view, ctx, suffix=".dtype", value_map=lambda v: _dtype_value(ctx.target, v))


def _dtype_value(target, value: str) -> str:
    from rlcompat.analysis.confighelpers import dtype_replacement, is_bf16

    return dtype_replacement(target, value)[0] if is_bf16(value) else value
