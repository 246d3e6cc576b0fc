from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.analysis.verlengines import report_engine_settings
from rlcompat.lang.settings import ConfigRule
from rlcompat.rule import Bad, Good

MEGATRON = "verl/trainer/config/engine/megatron.yaml"
TURBO = "turbo_config:\n  distributed:\n    fsdp_plan:\n      param_dtype: {p}\n      reduce_dtype: fp32\n      output_dtype: {o}\n"


class VerlEngineBf16Dtype(ConfigRule):
    code = "RLC120"
    name = "verl-engine-bf16-dtype"
    title = "bf16 set for a verl training engine other than the default FSDP one (Megatron, fsdp_turbo)"
    what = (
        "Finds bf16 in the settings that only verl's other training engines read, as listed per verl version in "
        "rules/verl/<version>.toml (`engine`): the Megatron engine's `megatron.dtype` (actor, ref, critic, the 0.7 "
        "reward model) and fsdp_turbo's `turbo_config.distributed.fsdp_plan.param_dtype`/`output_dtype`. In verl's "
        "own config files they are what a run that selects that engine gets, so they are reported there, saying "
        "when they apply; in a user's config or command they are left alone when the run selects another engine, and a "
        "launch command that selects the engine (`model_engine=megatron`, `--config-name ppo_megatron_trainer`, "
        "`strategy=fsdp_turbo`) and leaves the setting out gets verl's default, which is reported too."
    )
    why = (
        "The engine builds the model and runs mixed precision in this dtype (Megatron: `param_dtype = "
        "engine_config.dtype`; fsdp_turbo: its FSDP plan). bf16 has no hardware below compute capability 8.0: it "
        "is emulated and slow, and fused kernels refuse it [S1][S5]."
    )
    fix_safety = (
        "The bf16 spelling becomes the fp32 one (`float32`, `fp32`; added as an override where a launch command "
        "left it out): the precision policy keeps training weights in fp32 below sm80 (docs/precision.md), which "
        "is safe (Megatron at float32 turns neither its fp16 nor its bf16 mode on: verl 0.9.1 "
        "verl/workers/engine/megatron/transformer_impl.py:334-335); fp16 would be faster on sm70/sm75 but a "
        "bf16-pretrained model may overflow in it [S66], so rlcompat does not choose it for you. Where the "
        "version's knowledge says the engine's config class accepts only some values (`accepts`: verl 0.8.0's "
        "McoreEngineConfig asserts bfloat16 or float16), float32 is not written: float16 on sm70/sm75 (unsafe, "
        "Megatron's fp16 optimizer scales the loss), and no fix on sm6x, where the message says to use the FSDP engine."
    )
    triggers = ("dtype",) + h.ENTRY_TRIGGERS
    sources = ("S1", "S5", "S66")

    bad = (
        Bad("# Mixed precision training param dtype\ndtype: bfloat16 # [\"bfloat16\", \"float16\"]\n", path=MEGATRON,
            fixed="# Mixed precision training param dtype\ndtype: float32 # [\"bfloat16\", \"float16\"]\n"),
        Bad(TURBO.format(p="bf16", o="bf16"), fixed=TURBO.format(p="fp32", o="fp32"),
            path="verl/trainer/config/engine/fsdp.yaml"),
        Bad("python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer "
            "actor_rollout_ref.actor.megatron.dtype=bfloat16\n", path="run.sh",
            fixed="python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer "
            "actor_rollout_ref.actor.megatron.dtype=float32 actor_rollout_ref.ref.megatron.dtype=float32 "
            "critic.megatron.dtype=float32\n"),
        # a command that selects the engine and leaves its dtype at verl's default gets the override added
        Bad("python3 -m verl.trainer.main_ppo model_engine=megatron algorithm.adv_estimator=grpo\n", path="run.sh",
            fixed="python3 -m verl.trainer.main_ppo model_engine=megatron algorithm.adv_estimator=grpo "
            "actor_rollout_ref.actor.megatron.dtype=float32 actor_rollout_ref.ref.megatron.dtype=float32\n"),
    )
    good = (
        Good("dtype: float16\n", path=MEGATRON, target="sm75"),
        Good("dtype: bfloat16\n", path=MEGATRON, target="sm80"),
        Good(TURBO.format(p="fp32", o="fp32"), path="verl/trainer/config/engine/fsdp.yaml"),
        Good("python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.strategy=fsdp "
             "actor_rollout_ref.actor.megatron.dtype=bfloat16\n", path="run.sh"),
        Good("megatron:\n  dtype: bfloat16\n", path="other_tool.yaml"),
        Good("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
             "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32\n", path="run.sh"),
        Good("python3 -m verl.trainer.sft_trainer model_engine=megatron\n", path="run.sh"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        target = ctx.target

        def describe(key: str, value: str) -> str:
            return f"the engine computes in bf16, which {target.name} ({target.architecture}) only emulates"

        report_engine_settings(view, ctx, "engine-dtype", h.is_bf16,
                               lambda v: h.dtype_replacement(target, v, "weights"), describe)
