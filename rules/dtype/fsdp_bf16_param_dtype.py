from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, Good, VERL_091

CMD = "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n    {extra}trainer.n_gpus_per_node=1\n"
KEY = "actor_rollout_ref.{role}.fsdp_config.mixed_precision.param_dtype"


class FsdpBf16ParamDtype(ConfigRule):
    code = "RLC105"
    name = "fsdp-bf16-param-dtype"
    title = "verl's FSDP engine computes in bf16 (mixed_precision.param_dtype) on a GPU without bf16"
    what = (
        "Finds `fsdp_config.mixed_precision.param_dtype` set to `bf16`/`bfloat16` for the actor, reference or critic, "
        "and launch scripts that leave it unset: verl's FSDP engine then uses `torch.bfloat16` [S51]."
    )
    why = (
        "FSDP casts parameters to param_dtype for every forward and backward, and verl autocasts to it. On compute "
        "capability < 8.0 bf16 has no hardware: it is emulated and slow, and fused kernels (SDPA, Triton) refuse it "
        "[S1][S5]. `fsdp_config.dtype` looks like the switch but is Megatron-only (RLC106)."
    )
    fix_safety = (
        "`fp32` on every target without bf16, which is safe: the precision policy keeps training weights in fp32 "
        "below sm80 (docs/precision.md). fp16 with verl's ShardedGradScaler also trains on sm70/sm75 and is faster, but "
        "a bf16-pretrained model may overflow in fp16 [S66], so rlcompat does not choose it for you. "
        "In a script the override is added with `++` (add, or override a custom config's value), since `mixed_precision` is not in verl's YAML tree."
    )
    names = ("param_dtype", "dtype:")  # dtype: verl 0.7's legacy worker reads fsdp_config.dtype
    verl_commands = True  # a verl launch command that leaves its key at the bad default
    sources = ("S1", "S5", "S51", "S66")

    bad = (
        Bad(CMD.format(extra=""), path="run.sh",
            fixed=CMD.format(extra="").replace("=1\n", "=1 \\\n    ++" + KEY.format(role="actor") + "=fp32 \\\n    ++"
                                                + KEY.format(role="ref") + "=fp32\n"), frameworks=VERL_091),
        Bad(CMD.format(extra="+" + KEY.format(role="actor") + "=bf16 \\\n    +" + KEY.format(role="ref") + "=fp32 \\\n    "),
            path="run.sh", target="sm75",
            fixed=CMD.format(extra="+" + KEY.format(role="actor") + "=fp32 \\\n    +" + KEY.format(role="ref") + "=fp32 \\\n    ")),
        Bad("actor_rollout_ref:\n  actor:\n    fsdp_config:\n      mixed_precision:\n        param_dtype: bf16\n",
            fixed="actor_rollout_ref:\n  actor:\n    fsdp_config:\n      mixed_precision:\n        param_dtype: fp32\n",
            path="config.yaml"),
    )
    good = (
        Good(CMD.format(extra=""), path="run.sh", target="sm80"),
        Good(CMD.format(extra="+" + KEY.format(role="actor") + "=fp32 \\\n    +" + KEY.format(role="ref") + "=fp32 \\\n    "),
             path="run.sh"),
        Good("python3 -m openrlhf.cli.train_ppo_ray --bf16\n", path="run.sh"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        target = ctx.target

        def describe(key: str, value: str, origin: str) -> str:
            new, _ = h.dtype_replacement(target, value)
            return (f"{key} is {value}{origin}: FSDP computes in bf16, which {target.name} ({target.architecture}) "
                    f"only emulates; use {new}")

        h.set_or_add(view, ctx, "param-dtype", h.is_bf16, lambda v: h.dtype_replacement(target, v), describe)
