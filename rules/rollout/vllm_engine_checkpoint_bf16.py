from __future__ import annotations

import ast

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule
from rlcompat.knowledge import precision, versions, vllm
from rlcompat.knowledge.capabilities import min_capability
from rlcompat.knowledge.environment import error_text

_ENGINES = frozenset({"LLM", "EngineArgs", "AsyncEngineArgs"})


def _another_class(call: cst.Call, ctx) -> bool:
    """Whether the name called is bound to something other than vLLM's class: imported from another module (a
    relative import names the project's own code: openpipe-art 0.3.11's `from .engine import EngineArgs`, a TypedDict
    of the arguments it hands Unsloth, src/art/dev/model.py:13, :40) or a class the file defines. A name the file's
    imports bind to vllm, or that nothing in the file binds, is vLLM's."""
    qualname = ctx.qualname(call.func)
    if qualname is not None:
        return qualname.split(".")[0] != "vllm"
    if not isinstance(call.func, cst.Name):
        return False
    name = call.func.value
    try:
        for tree in ctx.top_level_trees():  # the whole module's: the traversal may have been handed a part
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name == name:
                    return True
                if isinstance(node, ast.ImportFrom) and node.level and any(
                        (a.asname or a.name) == name for a in node.names):
                    return True
    except (SyntaxError, RecursionError):
        return False
    return False


class VllmEngineCheckpointBf16(PythonRule):
    code = "RLC418"
    name = "vllm-engine-checkpoint-bf16"
    title = "A vLLM engine given no dtype keeps a bf16 checkpoint in bf16, which vLLM up to 0.8.5 refuses below 8.0"
    what = (
        "Finds `LLM(...)`, `EngineArgs(...)` and `AsyncEngineArgs(...)` (what `AsyncLLMEngine.from_engine_args` "
        "takes) with no `dtype` argument and no `**kwargs` that could carry one, in a tree whose vLLM release (its "
        f"pin, package or the installed one) is {vllm.auto_dtype()['keeps_bf16_through']} or older. Newer releases "
        "fall back to float16 below 8.0 by themselves, and an unknown release is not reported; `dtype=\"auto\"` "
        "written out is RLC109's. A class of the same name imported from another module (a relative import: the "
        "project's own) or defined in the file is not vLLM's."
    )
    why = (
        "Without a dtype vLLM takes the checkpoint's (bf16 for most current models); up to "
        f"{vllm.auto_dtype()['keeps_bf16_through']} it keeps bf16 and its worker raises below 8.0: "
        f"`{error_text(vllm.auto_dtype()['error'])}` [S105]."
    )
    fix_safety = (
        "Adds the precision policy's rollout dtype: `dtype=\"float16\"` on sm70/sm75, unsafe (bf16-pretrained models "
        "may overflow in fp16; the message names known ones), `\"float32\"` for model types vLLM refuses in fp16."
    )
    names = ("LLM(", "EngineArgs(")
    # Words, not `resolves_from`: the engine is matched by its name as written (`h.call_name`); a file building
    # vLLM's engine names vllm (held by tests/test_trigger_gates.py)
    requires = (("vllm",),)
    sources = ("S6", "S105")

    bad = (
        Bad("from vllm import LLM\nllm = LLM(model='Qwen/Qwen2.5-0.5B', gpu_memory_utilization=0.5)\n", target="sm75",
            frameworks={"vllm": "0.8.5"}, unsafe=True,
            fixed="from vllm import LLM\n"
                  "llm = LLM(model='Qwen/Qwen2.5-0.5B', gpu_memory_utilization=0.5, dtype=\"float16\")\n"),
        Bad("from vllm import AsyncEngineArgs, AsyncLLMEngine\n"
            "engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model=path))\n", target="sm70",
            frameworks={"vllm": "0.6.3"}, unsafe=True,
            fixed="from vllm import AsyncEngineArgs, AsyncLLMEngine\n"
                  "engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(model=path, dtype=\"float16\"))\n"),
    )
    good = (
        Good("from vllm import LLM\nllm = LLM(model=path)\n", target="sm75", frameworks={"vllm": "0.9.2"}),
        Good("from vllm import LLM\nllm = LLM(model=path)\n", target="sm75"),
        Good("from vllm import LLM\nllm = LLM(model=path, dtype='half')\n", target="sm75", frameworks={"vllm": "0.8.5"}),
        Good("from vllm import LLM\nllm = LLM(model=path, **engine_kwargs)\n", target="sm75", frameworks={"vllm": "0.8.5"}),
        Good("from vllm import LLM\nllm = LLM(model=path)\n", target="sm80", frameworks={"vllm": "0.8.5"}),
        # the project's own TypedDict of engine arguments (openpipe-art 0.3.11 src/art/dev/model.py:13, :40), handed
        # to Unsloth, which picks the dtype itself
        Good("import vllm\nfrom .engine import EngineArgs\nengine_args = EngineArgs(disable_log_requests=True)\n",
             target="sm75", frameworks={"vllm": "0.8.5"}),
        Good("import vllm\nfrom myproject.engine import EngineArgs\nargs = EngineArgs(enable_sleep_mode=True)\n",
             target="sm75", frameworks={"vllm": "0.8.5"}),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.capability < versions.capability(vllm.auto_dtype()["min_capability"])

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if h.call_name(node) not in _ENGINES or not node.args:
            return
        if any(a.star for a in node.args) or any(a.keyword is not None and a.keyword.value == "dtype" for a in node.args):
            return
        if _another_class(node, ctx):
            return
        release = ctx.release("vllm")
        if release is None or not vllm.keeps_checkpoint_bf16(release):
            return
        if self.target.capability < min_capability("vllm", release).capability:
            return  # vLLM does not run here at all: RLC413's
        if h.guarded_by(ctx.ancestors, h.is_capability_guard):
            return
        model = h.model_name(node)
        dtype = "float32" if precision.refuses_fp16(model) or precision.dtype_for(self.target, "rollout") != "float16" \
            else "float16"
        note = precision.fp16_overflow_note(model) if dtype == "float16" else ""
        last = node.args[-1].value
        code = cst.Module([]).code_for_node(last)
        row = vllm.auto_dtype()
        ctx.report(node, f"{h.call_name(node)}(...) names no dtype: vLLM {release} keeps a bf16 checkpoint in bf16 "
                         f"and refuses it on {self.target.name} ({self.target.capability_text}): "
                         f"`{error_text(row['error'])}`; pass dtype=\"{dtype}\"{note}",
                   PendingFix([(last, f'{code}, dtype="{dtype}"')],
                              FixSafety.SAFE if dtype == "float32" else FixSafety.UNSAFE, f'add dtype="{dtype}"'))
