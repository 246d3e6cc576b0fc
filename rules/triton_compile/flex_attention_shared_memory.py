from __future__ import annotations

from pathlib import Path

import libcst as cst

from rlcompat.knowledge.flex_attention import forward_config
from rlcompat.analysis import pyhelpers as h
from rlcompat.analysis.pymodel import attention_and_model_path, keyword
from rlcompat.contract import Bad, Good, PythonRule

_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "half": 2, "float": 4}
_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "flex_attention_head_dim_256_t4" / "input"
_EXAMPLE = str(_FIXTURE / "train.py")
_LOAD = ('import torch\nfrom transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained("{path}", '
         'dtype={dtype}, attn_implementation="{impl}")\n')


def one_stage_bytes(block_m: int, block_n: int, head_dim: int, element: int) -> int:
    """rlcompat's estimate (rlcompat/knowledge/data/flex_attention.toml): the Q tile and one K and one V tile."""
    return (block_m + 2 * block_n) * head_dim * element


def _dtype_of(node: cst.Call, ctx, shape) -> str | None:
    arg = keyword(node, "dtype") or keyword(node, "torch_dtype")
    if arg is None:
        return None  # the loader's default differs across transformers releases: no claim
    name = ctx.qualname(arg.value) or ""
    value = name.removeprefix("torch.") if name.startswith("torch.") else h.string_value(arg.value)
    if value == "auto":
        value = shape.dtype
    value = {"half": "float16", "float": "float32"}.get(value or "", value)
    return value if value in _BYTES else None


class FlexAttentionSharedMemory(PythonRule):
    code = "RLC357"
    name = "flex-attention-shared-memory"
    title = "flex_attention's default block sizes need more shared memory than the card has for the model's head_dim"
    what = (
        "Finds `attn_implementation=\"flex_attention\"` in a call that loads a local model directory (its config.json "
        "gives head_dim, as for RLC209) with a `dtype=`/`torch_dtype=` (`\"auto\"`: the checkpoint's dtype), takes "
        "torch 2.13's default forward block sizes for that capability, dtype and head_dim (rlcompat/knowledge/data/flex_attention.toml) "
        "and estimates the kernel's shared memory at one pipeline stage. Reports when that exceeds the card's opt-in "
        "limit (sm75: 64 KB; sm86/sm89: 99 KB). A direct `flex_attention(q, k, v)` call does not say its head_dim "
        "and is not judged; capabilities 9.0 and above are not modelled."
    )
    why = (
        "flex_attention is one Triton kernel whose Q, K and V tiles sit in shared memory; when they do not fit, "
        "Triton raises `OutOfResources: out of resource: shared memory, Required: ..., Hardware limit: 65536` on "
        "the first call [S73]. torch 2.13 recompiles a kernel once with one pipeline stage when the stages alone "
        "are too many [S72], so what fails there is a config whose single stage does not fit: on a T4 head_dim 192 "
        "and 256 with the default 64x64 blocks, on 99 KB cards head_dim above 256. The size is rlcompat's estimate "
        "((BLOCK_M + 2 * BLOCK_N) * head_dim * bytes), which reproduces the one public figure (131072 + 2 bytes for "
        "128x64 blocks, head_dim 128, 3 stages on an RTX 4090) [S73] but is not measured for these shapes: a warning."
    )
    fix_safety = (
        "No autofix: the block sizes are passed where attention runs, not where the model is loaded. The message "
        "names `kernel_options={\"BLOCK_M\": b, \"BLOCK_N\": b, \"num_stages\": 1}` (flex_attention's own option "
        "[S72]; transformers passes a model call's `kernel_options` on to it) with the largest b the estimate fits, "
        "or `attn_implementation=\"sdpa\"`."
    )
    names = ("flex_attention",)
    keywords = ("attn_implementation",)  # the keyword that selects it (analysis/pymodel.py)
    sources = ("S72", "S73")
    severity = "warning"
    prevents = ("X13",)

    bad = (
        Bad(_LOAD.format(path="models/gemma-2b", dtype="torch.float16", impl="flex_attention"), target="sm75",
            path=_EXAMPLE),
        Bad(_LOAD.format(path="models/head-dim-512", dtype='"auto"', impl="flex_attention"), target="sm86",
            path=_EXAMPLE),
    )
    good = (
        Good(_LOAD.format(path="models/gemma-2b", dtype="torch.float16", impl="flex_attention"), target="sm80",
             path=_EXAMPLE),
        Good(_LOAD.format(path="models/gemma-2b", dtype="torch.bfloat16", impl="flex_attention"), target="sm86",
             path=_EXAMPLE),
        Good(_LOAD.format(path="models/qwen2.5-0.5b", dtype="torch.float16", impl="flex_attention"), target="sm75",
             path=_EXAMPLE),
        Good(_LOAD.format(path="models/gemma-2b", dtype="torch.float16", impl="sdpa"), target="sm75", path=_EXAMPLE),
        Good('import torch\nfrom transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained('
             '"models/gemma-2b", attn_implementation="flex_attention")\n', target="sm75", path=_EXAMPLE),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return bool(target.inductor) and target.capability < (9, 0)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        found = attention_and_model_path(node, "flex_attention")
        if found is None:
            return
        impl, path = found
        shape = ctx.model_shape(path)
        if shape is None:
            return
        dtype = _dtype_of(node, ctx, shape)
        if dtype is None:
            return
        limit = self.target.fact("smem_per_block_optin")
        block_m, block_n, stages, _ = forward_config(self.target.capability, dtype, shape.head_dim)
        needed = one_stage_bytes(block_m, block_n, shape.head_dim, _BYTES[dtype])
        if not isinstance(limit, int) or needed <= limit:
            return
        block = next((b for b in (32, 16) if one_stage_bytes(b, b, shape.head_dim, _BYTES[dtype]) <= limit), None)
        remedy = (f'pass kernel_options={{"BLOCK_M": {block}, "BLOCK_N": {block}, "num_stages": 1}} to the attention '
                  f'call (about {one_stage_bytes(block, block, shape.head_dim, _BYTES[dtype]) // 1024} KB) or use "sdpa"'
                  if block else 'use "sdpa"')
        ctx.report(impl.value,
                   f"flex_attention with head_dim {shape.head_dim} ({shape.head_dim_key} in {shape.config_path}) in "
                   f"{dtype}: torch 2.13's default blocks {block_m}x{block_n} need about {needed // 1024} KB of shared "
                   f"memory at one stage (estimate), {self.target.name} has {limit // 1024} KB: Triton raises "
                   f"`OutOfResources: out of resource: shared memory`; {remedy}")
