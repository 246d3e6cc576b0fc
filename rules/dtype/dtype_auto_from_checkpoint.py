from __future__ import annotations

import re

import libcst as cst

from rlcompat.knowledge import precision
from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule

_LOADERS = frozenset({"from_pretrained", "from_config"})
_ENGINES = frozenset({"LLM", "EngineArgs", "AsyncEngineArgs"})


class DtypeAutoFromCheckpoint(PythonRule):
    code = "RLC109"
    name = "dtype-auto-from-checkpoint"
    title = "`dtype=\"auto\"` takes the checkpoint's dtype (bf16 for most current models) on a GPU without bf16"
    what = (
        "Finds `torch_dtype=\"auto\"` / `dtype=\"auto\"` passed to transformers' `from_pretrained`/`from_config` and "
        "`dtype=\"auto\"` passed to vLLM's `LLM(...)`/`EngineArgs(...)`."
    )
    why = (
        "`\"auto\"` loads the dtype written in the checkpoint's config.json [S61], which is bfloat16 for most current "
        "models: transformers then trains bf16 weights that compute capability < 8.0 only emulates [S1]. vLLM resolves "
        "`auto` itself: below 8.0 it falls back to float16 for a bf16 checkpoint, so a bf16-pretrained model such as "
        "Qwen2.5 may overflow (`!!!!` output) [S65][S66], and model types it refuses in fp16 run in float32."
    )
    fix_safety = (
        "The dtype is written out as the precision policy's (docs/precision.md): transformers weights become "
        "`\"float32\"`, safe; vLLM's rollout dtype becomes `\"float16\"` on sm70/sm75, unsafe (what vLLM would pick, "
        "made visible; the message names model types known to overflow [S66]), `\"float32\"` on sm5x/sm6x and for model "
        "types vLLM refuses in fp16 (Gemma 2/3, GLM-4: safe) [S65]."
    )
    strings = ("auto",)
    keywords = ("torch_dtype", "dtype")
    calls = tuple(sorted(_LOADERS | _ENGINES))  # the called name as written (`h.call_name`)
    # the argument itself: the keyword, `=` and a string literal whose text is auto (blanks, line breaks, comments
    # and backslash continuations may stand between them), or an escape that could spell either
    spelled = re.compile(
        r"(?<!\w)(?:torch_)?dtype(?:\s|\\\r?\n|#[^\r\n]*)*=(?:\s|\\\r?\n|#[^\r\n]*)*[rRuU]?(?:'{3}|\"{3}|'|\")auto"
        r"|\\(?:[xuUN0-7]|\r?\n)")
    sources = ("S1", "S61", "S65", "S66")

    bad = (
        Bad("m = AutoModelForCausalLM.from_pretrained(p, torch_dtype='auto')\n", target="sm70",
            fixed="m = AutoModelForCausalLM.from_pretrained(p, torch_dtype='float32')\n"),
        Bad('m = AutoModel.from_pretrained(p, dtype="auto", device_map="auto")\n',
            fixed='m = AutoModel.from_pretrained(p, dtype="float32", device_map="auto")\n'),
        Bad("llm = LLM(model='Qwen/Qwen2.5-0.5B', dtype='auto')\n", target="sm75", unsafe=True,
            fixed="llm = LLM(model='Qwen/Qwen2.5-0.5B', dtype='float16')\n"),
        Bad("llm = LLM('google/gemma-2-2b-it', dtype='auto')\n", target="sm75",
            fixed="llm = LLM('google/gemma-2-2b-it', dtype='float32')\n"),
    )
    good = (
        Good("m = AutoModelForCausalLM.from_pretrained(p, torch_dtype='auto')\n", target="sm80"),
        Good("m = AutoModelForCausalLM.from_pretrained(p, device_map='auto')\n", target="sm70"),
        Good("m = AutoModelForCausalLM.from_pretrained(p, torch_dtype='float32')\n", target="sm70"),
        Good("x = config.get('dtype', 'auto')\n", target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is None or node.keyword.value not in self.keywords:
            return
        if h.string_value(node.value) != "auto":
            return
        call = ctx.ancestors[-1] if ctx.ancestors and isinstance(ctx.ancestors[-1], cst.Call) else None
        name = h.call_name(call) if call is not None else ""
        if name in _LOADERS:
            role, what = "weights", "transformers loads the checkpoint's dtype (bf16 for most current models)"
        elif name in _ENGINES and node.keyword.value == "dtype":
            role, what = "rollout", "vLLM falls back to float16 for a bf16 checkpoint, which bf16-pretrained models can overflow"
        else:
            return
        if h.guarded_by(ctx.ancestors, h.is_capability_guard):
            return
        dtype = "float16" if precision.dtype_for(self.target, role) == "float16" else "float32"
        if role == "rollout" and precision.refuses_fp16(h.model_name(call)):
            dtype = "float32"  # vLLM raises for float16 on this model type [S65]
        safety = FixSafety.SAFE if dtype == "float32" else FixSafety.UNSAFE
        note = precision.fp16_overflow_note(h.model_name(call)) if dtype == "float16" else ""
        ctx.report(node, f"{node.keyword.value}=\"auto\" in {name}(...): {what}; {self.target.name} "
                         f"({self.target.architecture}) has no bf16; use \"{dtype}\"{note}",
                   PendingFix([(node.value, h.requote(node.value, dtype))], safety, f'use "{dtype}"'))
