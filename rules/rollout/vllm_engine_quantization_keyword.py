from __future__ import annotations

import libcst as cst

from rlcompat.knowledge import vllm
from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule

ENGINE_CALLS = ("LLM", "EngineArgs", "AsyncEngineArgs", "AsyncLLMEngine", "LLMEngine")
KEYWORDS = {"quantization": "quantization", "kv_cache_dtype": "kv_cache_dtype"}


class VllmEngineQuantizationKeyword(PythonRule):
    code = "RLC406"
    name = "vllm-engine-quantization-keyword"
    title = "`LLM(quantization=...)` / `kv_cache_dtype=` asks vLLM for a method it refuses on the GPU"
    what = (
        "Finds `quantization=` and `kv_cache_dtype=` string arguments of vLLM's `LLM(...)`, `EngineArgs(...)` and "
        "`AsyncEngineArgs(...)`, and compares them with rlcompat/knowledge/data/vllm.toml (the table RLC405 reads for command lines)."
    )
    why = (
        "vLLM raises `The quantization method ... is not supported for the current GPU. Minimum capability: ...` "
        "below the method's minimum, and refuses an fp8 KV cache on the Triton attention backend, the only one left "
        "below 8.0 [S56]."
    )
    fix_safety = (
        "`kv_cache_dtype=\"fp8\"` becomes `\"float16\"`: safe (a smaller cache in tokens). Quantization methods get no "
        "fix (a checkpoint's method cannot be switched off by a keyword)."
    )
    # Only string literals are judged, so only files that write one as the keyword's value are parsed for it.
    names = ('quantization="', "quantization='", 'kv_cache_dtype="', "kv_cache_dtype='")
    sources = ("S56",)
    prevents = ("X8", "X9")

    bad = (
        Bad('from vllm import LLM\nllm = LLM(model="Qwen/Qwen2.5-7B-Instruct-AWQ", quantization="awq")\n', target="sm70"),
        Bad('llm = LLM(model=path, kv_cache_dtype="fp8")\n', target="sm75",
            fixed='llm = LLM(model=path, kv_cache_dtype="float16")\n'),
        Bad('args = AsyncEngineArgs(model=m, quantization="fp8")\n', target="sm70"),
    )
    good = (
        Good('llm = LLM(model=m, quantization="awq")\n', target="sm75"),
        Good('llm = LLM(model=m, kv_cache_dtype="fp8")\n', target="sm89"),
        Good('model = AutoModelForCausalLM.from_pretrained(m, quantization="awq")\n', target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        facts = vllm.table()
        return any(vllm.refused(t, v, target.capability) for t in ("quantization", "kv_cache_dtype")
                   for v in facts[t])

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is None or node.keyword.value not in KEYWORDS:
            return
        call = ctx.ancestors[-1] if ctx.ancestors else None
        if not isinstance(call, cst.Call) or h.call_name(call) not in ENGINE_CALLS:
            return
        value = h.string_value(node.value)
        if value is None:
            return
        version = vllm.table()["version"]
        if node.keyword.value == "quantization":
            entry = vllm.refused("quantization", value, self.target.capability)
            if entry:
                ctx.report(node, f"vLLM {version} refuses quantization={value!r} below capability "
                                 f"{entry['min_capability']} ({self.target.name} is {self.target.capability_text}; "
                                 f"vllm {entry['where']})")
            return
        entry = vllm.refused("kv_cache_dtype", value, self.target.capability)
        if entry and isinstance(node.value, cst.SimpleString):
            ctx.report(node, f"an {value} KV cache below capability 8.0 runs on vLLM's Triton attention backend, which "
                             f"refuses fp8 below 8.9 (vLLM {version} {entry['where']}); use float16",
                       PendingFix([(node.value, h.requote(node.value, "float16"))], FixSafety.SAFE,
                                  "use a float16 KV cache"))
