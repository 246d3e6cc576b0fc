from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.knowledge import capabilities, trl_paths
from rlcompat.contract import Bad, Good, PythonRule

_CODE = ("from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer\n"
         "args = AsyncGRPOConfig(output_dir='o', vllm_server_base_url='http://localhost:8000')\n"
         "trainer = AsyncGRPOTrainer(model='Qwen/Qwen2.5-0.5B', reward_funcs=[r], args=args, train_dataset=ds)\n")
_NAME = "AsyncGRPOTrainer"


def _no_vllm(target, release: str | None) -> bool:
    """Whether the vLLM the run generates with cannot run on `target`: that release's minimum where known, else no
    release of vLLM runs there."""
    if release:
        return not capabilities.runs("vllm", target, release)
    return not capabilities.runs("vllm", target) and capabilities.last_release_that_runs("vllm", target) is None


class TrlAsyncGrpoFlashAttention3(PythonRule):
    code = "RLC430"
    name = "trl-async-grpo-flash-attention-3"
    title = "TRL's AsyncGRPOTrainer hard-codes FlashAttention-3 (from TRL 1.7.0) and always generates with vLLM"
    what = (
        "Finds `AsyncGRPOTrainer(...)` of `trl.experimental.async_grpo`. From TRL 1.7.0 the trainer loads the policy "
        "with FlashAttention-3 whatever its config says (`kernels-community/flash-attn3`; 1.16.0: its `tree_fa3` "
        "attention over the same kernel), and every release generates through a vLLM server "
        "(rlcompat/knowledge/data/trl_paths.toml `[[async_grpo]]`). Reported on targets without FlashAttention-3 "
        "(the vLLM part where the vLLM release the file runs, or every vLLM release, cannot run); a TRL release "
        "before 1.7.0 is not reported for attention, an unknown release is a warning."
    )
    why = (
        "FlashAttention-3 is built for Hopper (9.0) only [S9][S13]. TRL's asynchronous trainer packs rollouts "
        "padding-free and passes `attn_implementation` itself next to `**model_init_kwargs`; AsyncGRPOConfig has no "
        "field for it, so the only config route (`model_init_kwargs={\"attn_implementation\": ...}`) stops with a "
        "TypeError, and there is no switch away from vLLM [S146]. "
        f"{capabilities.min_capability('vllm').by_release()} [S7]."
    )
    fix_safety = (
        "No fix: the TRL release has no config field that selects another attention or engine. Train with "
        "`GRPOTrainer` (its attention follows `model_init_kwargs`, generation with `use_vllm=False`) or with TRL < 1.7.0."
    )
    calls = (_NAME,)  # the trainer class called
    resolves_from = ("trl",)  # the trainer resolved through an import of trl
    sources = ("S7", "S9", "S13", "S146")

    bad = (
        Bad(_CODE, target="sm80", frameworks={"trl": "1.16.0"}),
        Bad(_CODE, target="sm75", frameworks={"trl": "1.9.0"}),
        Bad(_CODE, target="sm61", frameworks={"trl": "1.4.0"}),  # vLLM: no release runs on Pascal
        Bad(_CODE, target="sm86"),  # the release unknown: a warning
    )
    good = (
        Good(_CODE, target="sm90", frameworks={"trl": "1.16.0"}),
        Good(_CODE, target="sm75", frameworks={"trl": "1.4.0"}),
        Good(_CODE, target="sm70", frameworks={"trl": "1.4.0", "vllm": "0.17.1"}),
        Good("from trl import GRPOTrainer\ntrainer = GRPOTrainer(model=m, reward_funcs=[r], args=args)\n",
             target="sm75", frameworks={"trl": "1.16.0"}),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_3 or not target.vllm

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if h.call_name(node) != _NAME or not (ctx.qualname(node.func) or "").startswith("trl."):
            return
        release = ctx.release("trl")
        row = trl_paths.async_grpo(release) if release else None
        if release and row is None:
            return  # a release the table has not read
        target = self.target
        shown = row or trl_paths.first_async_grpo_attention()
        reasons = []
        if shown.attention and not target.flash_attn_3:
            since = "" if row else f" from TRL {shown.releases[0]}"
            minimum = capabilities.min_capability("flash_attn_3")
            reasons.append(f"it loads the policy with FlashAttention-3 (`{shown.attention_spelling}`{since}: "
                           f"{shown.site(release or shown.releases[0])}), which needs compute capability {minimum.text} (Hopper), "
                           "and no AsyncGRPOConfig field changes it (`model_init_kwargs` with attn_implementation "
                           "collides with that keyword: TypeError)")
        vllm = ctx.release("vllm")
        if _no_vllm(target, vllm):
            row_v = capabilities.min_capability("vllm", vllm)
            reasons.append(f"it generates only through a vLLM server, and {row_v.by_release() if not vllm else f'vLLM {vllm} needs compute capability {row_v.text}+'}")
        if not reasons:
            return
        if h.guarded_by(ctx.ancestors, h.is_capability_guard):
            return
        where = f"TRL {release}" if release else "TRL (release unknown)"
        ctx.report(node, f"AsyncGRPOTrainer of {where} cannot train on {target.name} ({target.capability_text}): "
                         f"{'; '.join(reasons)}; train with GRPOTrainer (attention from model_init_kwargs, "
                         "use_vllm=False) instead", severity="" if release else "warning")
