from __future__ import annotations

from rlcompat.knowledge import vllm
from rlcompat.analysis.confighelpers import remove_flag
from rlcompat.contract import Bad, ConfigRule, Edit, FixSafety, Good, Span
from rlcompat.rules.rollout.helpers import vllm_command

QUANT_FLAGS = ("--quantization", "-q")
KV_FLAGS = ("--kv-cache-dtype", "--kv_cache_dtype")


def flag_values(view, names: tuple[str, ...]):
    """(value, value span, span of flag and value) of each `--flag value` / `--flag=value` among the words."""
    words, spans = view.command_words, view.word_spans
    for i, w in enumerate(words):
        name, eq, inline = w.partition("=")
        if name not in names or len(spans) != len(words):
            continue
        if eq:
            start = spans[i].end - len(inline)
            yield inline, Span(start, spans[i].end), spans[i]
        elif i + 1 < len(words):
            yield words[i + 1], spans[i + 1], Span(spans[i].start, spans[i + 1].end)


class VllmQuantizationMinimum(ConfigRule):
    code = "RLC405"
    name = "vllm-quantization-minimum"
    title = "`vllm serve --quantization` / `--kv-cache-dtype` asks for a method vLLM refuses on the GPU"
    what = (
        "Reads `--quantization`/`-q` and `--kv-cache-dtype` of `vllm serve` and `python -m vllm.entrypoints...` "
        "commands in scripts, and compares them with the minimum capability of each method in rlcompat/knowledge/data/vllm.toml "
        "(vLLM 0.33.0's `get_min_capability`, file:line per entry)."
    )
    why = (
        "vLLM checks the method's minimum before loading and raises `The quantization method ... is not supported "
        "for the current GPU. Minimum capability: 75. Current capability: 70.` [S56]: AWQ needs 7.5, "
        "compressed-tensors 7.0, fbgemm_fp8 / experts_int8 / mxfp4 8.0, fp8 7.5 (weights-only through Marlin below "
        "8.9). An fp8 KV cache below 8.0 runs on the Triton attention backend, which refuses fp8 below 8.9 [S56]."
    )
    fix_safety = (
        "`--kv-cache-dtype fp8` becomes `float16` (what vLLM's message asks for; the cache holds fewer tokens): "
        "safe. An fp8 `--quantization` is removed (the model then runs unquantized and needs more memory): unsafe. "
        "Other methods are properties of the checkpoint: no fix."
    )
    names = ("--quantization", "-q ", "kv-cache-dtype", "kv_cache_dtype")
    sources = ("S56",)
    prevents = ("X8", "X9")
    languages = frozenset({"shell", "markdown"})

    bad = (
        Bad("vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --quantization awq --dtype half\n", path="serve.sh", target="sm70"),
        Bad("vllm serve m --quantization fp8\n", path="serve.sh", target="sm70", unsafe=True, fixed="vllm serve m\n"),
        Bad("python -m vllm.entrypoints.openai.api_server --model m --kv-cache-dtype fp8\n", path="serve.sh",
            target="sm75", fixed="python -m vllm.entrypoints.openai.api_server --model m --kv-cache-dtype float16\n"),
    )
    good = (
        Good("vllm serve m --quantization awq\n", path="serve.sh", target="sm75"),
        Good("vllm serve m --quantization gptq\n", path="serve.sh", target="sm70"),
        Good("vllm serve m --kv-cache-dtype fp8\n", path="serve.sh", target="sm89"),
        Good("python train.py --quantization awq\n", path="run.sh", target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        facts = vllm.table()
        return any(vllm.refused(t, v, target.capability) for t in ("quantization", "kv_cache_dtype")
                   for v in facts[t])

    def check_config(self, view, ctx) -> None:
        if view.kind != "command" or not vllm_command(view.command_words):
            return
        version = vllm.table()["version"]
        for value, span, whole in flag_values(view, QUANT_FLAGS):
            entry = vllm.refused("quantization", value, self.target.capability)
            if entry is None:
                continue
            edit = remove_flag(ctx.source_text, whole) if value.lower() == "fp8" else None
            ctx.report(span, f"vLLM {version} refuses --quantization {value} below capability "
                             f"{entry['min_capability']} ({self.target.name} is {self.target.capability_text}; "
                             f"vllm {entry['where']})", [edit], FixSafety.UNSAFE, "run unquantized")
        for value, span, _ in flag_values(view, KV_FLAGS):
            entry = vllm.refused("kv_cache_dtype", value, self.target.capability)
            if entry is None:
                continue
            ctx.report(span, f"an {value} KV cache below capability 8.0 runs on vLLM's Triton attention backend, "
                             f"which refuses fp8 below 8.9 (vLLM {version} {entry['where']}); use float16",
                       [Edit(span.start, span.end, "float16")], FixSafety.SAFE, "use a float16 KV cache")
