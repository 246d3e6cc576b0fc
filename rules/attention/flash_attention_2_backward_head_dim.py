from __future__ import annotations

from pathlib import Path

import libcst as cst

from rlcompat.knowledge import flash_attn_backward
from rlcompat.analysis import pyhelpers as h
from rlcompat.analysis.pymodel import attention_and_model_path
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule

# Rule examples need a model directory on disk: the fixture's, found from this file (a repository checkout).
_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "fa2_head_dim_256_rtx3090" / "input"
_EXAMPLE = str(_FIXTURE / "train.py")
_LOAD = 'from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained("{path}", attn_implementation="{impl}")\n'


class FlashAttention2BackwardHeadDim(PythonRule):
    code = "RLC209"
    name = "flash-attention-2-backward-head-dim"
    title = "FlashAttention-2 training of a local model whose head_dim is above 192 on a card with 99 KB of shared memory"
    what = (
        "Finds `attn_implementation=\"flash_attention_2\"` in a call whose model path (first argument or "
        "`pretrained_model_name_or_path=`/`model_name_or_path=`) is a string naming a local directory with a "
        "config.json, and reads head_dim (or hidden_size / num_attention_heads, or the `text_config` of a "
        "multimodal config) and attention dropout from it. Targets: FlashAttention-2 cards with less than 144 KB of "
        "opt-in shared memory per block (sm86, sm89, sm120). A hub id or a directory that is not there is not read "
        "and nothing is claimed."
    )
    why = (
        "FlashAttention-2's backward for head_dim 193-256 has its full kernel only on cards with 144 KB of shared "
        "memory (A100, H100); on 99 KB cards flash-attn up to 2.5.4 raises `FlashAttention backward for head dim > "
        "192 requires A100/A800 or H100/H800`, 2.5.5-2.6.1 still refuse head_dim 193-224, and with attention "
        "dropout every release fails: 2.5.5-2.7.2 raise, 2.7.3 and later launch no backward kernel at all [S70]. "
        "With dropout the finding is an error; without it (or when the config does not say) a warning that names "
        "the first release that runs it."
    )
    fix_safety = (
        "With attention dropout the fix selects `\"sdpa\"`: PyTorch does not pick its own flash kernel for this "
        "head_dim and dropout on these cards and computes the same attention with the memory-efficient kernel [S71]: "
        "safe. Without dropout there is no fix: a flash-attn release from the message runs it."
    )
    names = ("flash_attention_2",)
    keywords = ("attn_implementation",)  # the keyword that selects it (analysis/pymodel.py)
    sources = ("S70", "S71")
    prevents = ("X12",)

    bad = (
        Bad(_LOAD.format(path="models/gemma-7b-dropout", impl="flash_attention_2"), target="sm86", path=_EXAMPLE,
            fixed=_LOAD.format(path="models/gemma-7b-dropout", impl="sdpa")),
        Bad(_LOAD.format(path="models/gemma-7b", impl="flash_attention_2"), target="sm89", path=_EXAMPLE),
    )
    good = (
        Good(_LOAD.format(path="models/gemma-7b-dropout", impl="flash_attention_2"), target="sm80", path=_EXAMPLE),
        Good(_LOAD.format(path="models/qwen2.5-0.5b", impl="flash_attention_2"), target="sm86", path=_EXAMPLE),
        Good(_LOAD.format(path="google/gemma-7b", impl="flash_attention_2"), target="sm86", path=_EXAMPLE),
        Good(_LOAD.format(path="models/gemma-7b-dropout", impl="sdpa"), target="sm86", path=_EXAMPLE),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return flash_attn_backward.applies_to(target)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        found = attention_and_model_path(node, "flash_attention_2")
        if found is None:
            return
        impl, path = found
        hazard = flash_attn_backward.backward_hazard(ctx.model_shape(path), self.target)
        if hazard is None:
            return
        if hazard.with_dropout:
            ctx.report(impl.value, hazard.message.replace("use sdpa", 'use "sdpa"'),
                       PendingFix([(impl.value, h.requote(impl.value, "sdpa"))], FixSafety.SAFE, 'use "sdpa"'))
        else:
            ctx.report(impl.value, hazard.message.replace("or sdpa", 'or "sdpa"'), severity="warning")
