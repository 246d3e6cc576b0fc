from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.lang.settings import ConfigRule
from rlcompat.findings import FixSafety
from rlcompat.rule import VERL_091, Bad, Good

CMD = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.model.path={model} \\\n    {extra}trainer.n_gpus_per_node=1\n"
KEY = "actor_rollout_ref.model.use_remove_padding"


class RemovePaddingVisionFlash(ConfigRule):
    code = "RLC206"
    name = "remove-padding-vision-flash"
    title = "`use_remove_padding` on a vision-language model whose patched attention is FlashAttention-only"
    what = (
        "Finds verl launch scripts training a Qwen2-VL, Qwen2.5-VL, GLM-4V or Kimi-VL model (by its path) with "
        "`actor_rollout_ref.model.use_remove_padding` true, set or left at verl's default (true) [S51]. Text-only models "
        "are not reported: their remove-padding path does not need flash-attn."
    )
    why = (
        "For these model types verl replaces the attention forward with one that calls FlashAttention's varlen kernel "
        "when remove-padding is on, and FlashAttention-2 needs compute capability 8.0 [S10]."
    )
    fix_safety = "`use_remove_padding=False` trains on padded batches: the same result with more compute, safe."
    triggers = ("use_remove_padding",) + h.ENTRY_TRIGGERS
    sources = ("S10", "S51")

    bad = (
        Bad(CMD.format(model="Qwen/Qwen2.5-VL-3B-Instruct", extra=""), path="run.sh",
            fixed=CMD.format(model="Qwen/Qwen2.5-VL-3B-Instruct", extra="").replace("=1\n", f"=1 \\\n    {KEY}=False\n"),
            frameworks=VERL_091),
        Bad(CMD.format(model="Qwen/Qwen2-VL-7B", extra=f"{KEY}=True \\\n    "), path="run.sh",
            fixed=CMD.format(model="Qwen/Qwen2-VL-7B", extra=f"{KEY}=False \\\n    ")),
    )
    good = (
        Good(CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct", extra=""), path="run.sh"),
        Good(CMD.format(model="Qwen/Qwen2.5-VL-3B-Instruct", extra=""), path="run.sh", target="sm80"),
        Good("use_remove_padding: True\n", path="verl/trainer/config/model/hf_model.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_2

    def check_config(self, view, ctx) -> None:
        model = view.get("actor_rollout_ref.model.path")
        if model is None or model.value is None:
            return
        name = model.value.lower()
        if not any(p in name for p in ctx.verl.remove_padding_patterns):
            return
        target = ctx.target

        proof = ctx.verl.remove_padding_proof.split(";")[0]
        proof = proof if ctx.verl.version_known else ctx.verl.cite(proof)  # no file:line of another release

        def describe(key: str, value: str, origin: str) -> str:
            return (f"{key} is {value}{origin} for {model.value}: verl then patches its attention with FlashAttention's "
                    f"varlen kernel ({proof}), which needs compute capability 8.0+; "
                    f"{target.name} is {target.capability_text}: set it to False")

        h.set_or_add(view, ctx, "remove-padding", lambda v: v.strip().lower() in h.TRUE_WORDS,
                     lambda v: (False, FixSafety.SAFE), describe, roles=("actor",))
