from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, Good

CMD = "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n    {extra}trainer.n_gpus_per_node=1\n"
KEY = "actor_rollout_ref.actor.fsdp_config.model_dtype"
# The dtype verl loads the training weights in; the precision policy keeps training weights in fp32 on every
# GPU without bf16 (sm70/sm75 compute in fp16 through mixed precision, with fp32 master weights).

class FsdpBf16ModelDtype(ConfigRule):
    code = "RLC119"
    name = "fsdp-bf16-model-dtype"
    title = "verl loads the FSDP model weights in bf16 (fsdp_config.model_dtype) on a GPU without bf16"
    what = (
        "Finds `fsdp_config.model_dtype` set to `bf16`/`bfloat16` for the actor, reference or critic, in YAML or as a "
        "Hydra override (`+actor_rollout_ref.actor.fsdp_config.model_dtype=bfloat16`), and launch scripts whose verl "
        "version loads a role in bf16 when the key is unset (verl 0.5's reference model) [S51]."
    )
    why = (
        "verl builds the model with `from_pretrained(torch_dtype=model_dtype)`: the weights, and the optimizer state "
        "of a trained role, are then bf16, which compute capability < 8.0 only emulates [S1]; an fp16 grad scaler "
        "refuses bf16 gradients."
    )
    fix_safety = "`fp32`/`float32` weights (mixed precision still decides the compute dtype): safe, more memory."
    names = ("model_dtype",)
    verl_commands = True  # a verl launch command that leaves its key at the bad default
    sources = ("S1", "S51")

    bad = (
        Bad(CMD.format(extra=f"+{KEY}=bfloat16 \\\n    "), path="run.sh",
            fixed=CMD.format(extra=f"+{KEY}=float32 \\\n    ")),
        Bad(CMD.format(extra=f"+{KEY}=bf16 \\\n    "), path="run.sh", target="sm75",
            fixed=CMD.format(extra=f"+{KEY}=fp32 \\\n    ")),
        Bad("actor_rollout_ref:\n  actor:\n    fsdp_config:\n      model_dtype: bf16  # weights\n", path="ppo.yaml",
            fixed="actor_rollout_ref:\n  actor:\n    fsdp_config:\n      model_dtype: fp32  # weights\n"),
    )
    good = (
        Good(CMD.format(extra=f"+{KEY}=fp32 \\\n    "), path="run.sh"),
        Good(CMD.format(extra=f"+{KEY}=bfloat16 \\\n    "), path="run.sh", target="sm80"),
        Good(CMD.format(extra=""), path="run.sh"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        target = ctx.target

        def replacement(value: str):
            return h.dtype_replacement(target, value, "weights")  # training weights: fp32 by the policy (safe)

        def describe(key: str, value: str, origin: str) -> str:
            return (f"{key} is {value}{origin}: verl loads the weights in bf16, which {target.name} "
                    f"({target.architecture}) only emulates; use {replacement(value)[0]}")

        h.set_or_add(view, ctx, "model-dtype", h.is_bf16, replacement, describe)
