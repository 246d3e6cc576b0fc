from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, FALSE_WORDS, FixSafety, Good, VERL_091

CMD = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.name={name} \\\n    {extra}trainer.n_gpus_per_node=1\n"
KEY = "actor_rollout_ref.rollout.enforce_eager"


class RolloutCompiledGraphs(ConfigRule):
    code = "RLC402"
    name = "rollout-compiled-graphs"
    title = "vLLM rollout with `enforce_eager: False` compiles with Inductor on a GPU it refuses"
    what = (
        "Finds `actor_rollout_ref.rollout.enforce_eager` set to false (verl's `rollout/rollout.yaml` default [S51], user "
        "configs, Hydra overrides) and vLLM launch scripts that leave it unset."
    )
    why = (
        "Without eager mode vLLM compiles the model with torch.compile and captures CUDA graphs [S52]; Inductor "
        "generates Triton kernels and refuses compute capability < 7.0 with `GPUTooOldForTriton` [S17]."
    )
    fix_safety = "`enforce_eager: True` runs the same model without compilation or CUDA graphs: slower decoding, safe."
    names = ("enforce_eager",)
    verl_commands = True  # a verl launch command that leaves its key at the bad default
    sources = ("S17", "S51", "S52")

    bad = (
        Bad("# Whether to disable CUDA graph. Default False to best performance.\nenforce_eager: False\n",
            fixed="# Whether to disable CUDA graph. Default False to best performance.\nenforce_eager: True\n",
            path="verl/trainer/config/rollout/rollout.yaml"),
        Bad(CMD.format(name="vllm", extra=""), path="run.sh",
            fixed=CMD.format(name="vllm", extra="").replace("=1\n", f"=1 \\\n    {KEY}=True\n"), frameworks=VERL_091),
        Bad(CMD.format(name="vllm", extra=f"{KEY}=false \\\n    "), path="run.sh",
            fixed=CMD.format(name="vllm", extra=f"{KEY}=true \\\n    ")),
    )
    good = (
        Good("enforce_eager: False\n", path="verl/trainer/config/rollout/rollout.yaml", target="sm75"),
        Good(CMD.format(name="vllm", extra=f"{KEY}=True \\\n    "), path="run.sh"),
        Good(CMD.format(name="sglang", extra=""), path="run.sh"),
        Good("name: ???\nenforce_eager: False\n", path="verl/trainer/config/rollout/rollout.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.inductor

    def check_config(self, view, ctx) -> None:
        if h.rollout_engine(view) not in (None, "vllm"):
            return  # another engine, or verl's mandatory `???`: no engine chosen here, so no vLLM setting applies yet
        target = ctx.target

        def describe(key: str, value: str, origin: str) -> str:
            return (f"{key} is {value}{origin}: vLLM then compiles with Inductor, which refuses {target.name} "
                    f"(compute capability {target.capability_text} < 7.0); set it to True")

        h.set_or_add(view, ctx, "rollout-enforce-eager", lambda v: v.strip().lower() in FALSE_WORDS,
                     lambda v: (True, FixSafety.SAFE), describe)
