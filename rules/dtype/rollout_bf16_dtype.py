from __future__ import annotations

from rlcompat.knowledge import precision
from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, Good, VERL_091

SCRIPT = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.name=vllm \\\n    {extra}trainer.n_gpus_per_node=1\n"


class RolloutBf16Dtype(ConfigRule):
    code = "RLC104"
    name = "rollout-bf16-dtype"
    title = "verl's rollout engine asked for bf16 on a GPU without bf16"
    what = (
        "Finds `actor_rollout_ref.rollout.dtype` set to `bfloat16` in verl's YAML (`trainer/config/rollout/rollout.yaml`, "
        "a user config) or as a Hydra override in a launch script, and launch scripts that leave it at verl's default, "
        "`bfloat16` [S51]."
    )
    why = (
        "The rollout engine loads the model in this dtype. vLLM refuses bf16 below compute capability 8.0 (`Bfloat16 is "
        "only supported on GPUs with compute capability of at least 8.0`) [S6]; SGLang switches to fp16 itself [S35]."
    )
    fix_safety = (
        "The value is rewritten in place (or the override added to the script), by the precision policy's rollout "
        "dtype (docs/precision.md). `float32` (sm5x, sm6x; and for model types vLLM refuses in fp16, Gemma 2/3 and "
        "GLM-4, told by `actor_rollout_ref.model.path` [S65]) is safe; `float16` (sm70, sm75, what vLLM itself "
        "suggests) is unsafe: a smaller range than bf16, and the message names models known to overflow [S66]."
    )
    names = ("dtype",)
    verl_commands = True  # a verl launch command that leaves its key at the bad default
    sources = ("S6", "S35", "S51", "S65", "S66")

    bad = (
        Bad("# for vllm rollout\ndtype: bfloat16\n", fixed="# for vllm rollout\ndtype: float32\n",
            path="verl/trainer/config/rollout/rollout.yaml"),
        Bad("actor_rollout_ref:\n  rollout:\n    dtype: 'bfloat16'  # keep\n",
            fixed="actor_rollout_ref:\n  rollout:\n    dtype: 'float32'  # keep\n", path="ppo.yaml"),
        Bad(SCRIPT.format(extra="actor_rollout_ref.rollout.dtype=bfloat16 \\\n    "),
            fixed=SCRIPT.format(extra="actor_rollout_ref.rollout.dtype=float32 \\\n    "), path="run.sh"),
        Bad(SCRIPT.format(extra=""), target="sm75", unsafe=True, path="run.sh",
            fixed=SCRIPT.format(extra="").replace("=1\n", "=1 \\\n    actor_rollout_ref.rollout.dtype=float16\n"),
            frameworks=VERL_091),
        Bad("python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=google/gemma-2-2b-it "
            "actor_rollout_ref.rollout.dtype=bfloat16\n", target="sm75", path="run.sh",
            fixed="python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=google/gemma-2-2b-it "
            "actor_rollout_ref.rollout.dtype=float32\n"),
        Bad('DTYPE=bfloat16\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype="$DTYPE"\n',
            fixed='DTYPE=float32\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype="$DTYPE"\n',
            path="run.sh"),
    )
    good = (
        Good("dtype: bfloat16\n", target="sm80", path="verl/trainer/config/rollout/rollout.yaml"),
        Good("model:\n  dtype: bfloat16\n", path="other.yaml"),
        Good(SCRIPT.format(extra="actor_rollout_ref.rollout.dtype=float16 \\\n    "), target="sm75", path="run.sh"),
        Good("python3 train.py actor_rollout_ref.rollout.dtype=bfloat16\n", path="run.sh", target="sm86"),
        Good("echo dtype=bfloat16\n", path="run.sh"),
    )
    bad = bad + (  # the reward model's rollout (verl 0.8+: reward/reward.yaml), when it is set
        Bad("reward_model:\n  rollout:\n    name: ???\n    dtype: bfloat16\n",
            fixed="reward_model:\n  rollout:\n    name: ???\n    dtype: float32\n",
            path="verl/trainer/config/reward/reward.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        target = ctx.target

        model = view.get("actor_rollout_ref.model.path")
        model_name = model.value if model is not None else None
        note = precision.fp16_overflow_note(model_name)

        def replacement(value: str):
            if precision.refuses_fp16(model_name):  # vLLM raises for float16 on this model type [S65]
                return h.dtype_replacement(target, value, "weights")  # the fp32 spelling: safe
            return h.dtype_replacement(target, value, "rollout")

        def describe(key: str, value: str, origin: str) -> str:
            new, _ = replacement(value)
            return (f"{key} is {value}{origin}: the rollout engine loads the model in bf16, which {target.name} "
                    f"({target.architecture}) lacks and vLLM refuses below 8.0; use {new}"
                    + (note if new == "float16" else ""))

        h.set_or_add(view, ctx, "rollout-dtype", h.is_bf16, replacement, describe, roles=("actor", "reward"))
