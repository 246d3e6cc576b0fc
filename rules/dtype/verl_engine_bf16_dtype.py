from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.analysis.verlengines import report_engine_settings
from rlcompat.contract import Bad, ConfigRule, Good, VERL_091

MEGATRON = "verl/trainer/config/engine/megatron.yaml"
TURBO = "turbo_config:\n  distributed:\n    fsdp_plan:\n      param_dtype: {p}\n      reduce_dtype: fp32\n      output_dtype: {o}\n"


class VerlEngineBf16Dtype(ConfigRule):
    code = "RLC120"
    name = "verl-engine-bf16-dtype"
    title = "bf16 set for a verl training engine other than the default FSDP one (Megatron, fsdp_turbo)"
    what = (
        "Finds bf16 in the settings that only verl's other training engines read, as listed per verl version in "
        "rlcompat/knowledge/data/verl/<version>.toml (`engine`): the Megatron engine's `megatron.dtype` (actor, ref, critic, the 0.7 "
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
        "fsdp_turbo: the bf16 spelling becomes the fp32 one (`fp32`; added as an override where a launch command "
        "left it out): the precision policy keeps training weights in fp32 below sm80 (docs/precision.md). "
        "Megatron: its config class takes only bfloat16 or float16 (`accepts` in the version's knowledge: "
        "McoreEngineConfig asserts it, verl 0.6.1 to 0.9.1), so float32 would stop the run at startup; the fix "
        "writes float16 on sm70/sm75 (unsafe: a bf16-pretrained model may overflow in it [S66]; Megatron's fp16 "
        "optimizer scales the loss), and gives none on sm6x, where the message says to use the FSDP engine."
    )
    names = ("dtype",)
    verl_commands = True  # a verl launch command that leaves its key at the bad default
    sources = ("S1", "S5", "S66")

    bad = (
        # McoreEngineConfig takes only bfloat16 or float16 (verl 0.9.1 verl/workers/config/engine.py:218): no fix on
        # sm61; float16 on sm75, whose tensor cores run it (unsafe: a bf16-pretrained model may overflow in it)
        Bad("# Mixed precision training param dtype\ndtype: bfloat16 # [\"bfloat16\", \"float16\"]\n", path=MEGATRON),
        Bad("# Mixed precision training param dtype\ndtype: bfloat16 # [\"bfloat16\", \"float16\"]\n", path=MEGATRON,
            target="sm75", unsafe=True,
            fixed="# Mixed precision training param dtype\ndtype: float16 # [\"bfloat16\", \"float16\"]\n"),
        Bad(TURBO.format(p="bf16", o="bf16"), fixed=TURBO.format(p="fp32", o="fp32"),
            path="verl/trainer/config/engine/fsdp.yaml"),
        Bad("python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer "
            "actor_rollout_ref.actor.megatron.dtype=bfloat16\n", path="run.sh", target="sm75", unsafe=True,
            fixed="python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer "
            "actor_rollout_ref.actor.megatron.dtype=float16 actor_rollout_ref.ref.megatron.dtype=float16 "
            "critic.megatron.dtype=float16\n", frameworks=VERL_091),
        # a command that selects the engine and leaves its dtype at verl's default gets the override added
        Bad("python3 -m verl.trainer.main_ppo model_engine=megatron algorithm.adv_estimator=grpo\n", path="run.sh",
            target="sm75", unsafe=True,
            fixed="python3 -m verl.trainer.main_ppo model_engine=megatron algorithm.adv_estimator=grpo "
            "actor_rollout_ref.actor.megatron.dtype=float16 actor_rollout_ref.ref.megatron.dtype=float16\n",
            frameworks=VERL_091),
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
