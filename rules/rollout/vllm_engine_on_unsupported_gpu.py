from __future__ import annotations

import libcst as cst

from rlcompat.lang.python import PythonRule
from rlcompat.rule import Bad, Good

# vLLM's engine classes a program builds to generate (the offline `LLM`, the V0/V1 engines), and their constructors.
ENGINES = frozenset({"vllm.LLM", "vllm.LLMEngine", "vllm.AsyncLLMEngine", "vllm.entrypoints.llm.LLM",
                     "vllm.engine.llm_engine.LLMEngine", "vllm.engine.async_llm_engine.AsyncLLMEngine",
                     "vllm.v1.engine.async_llm.AsyncLLM", "vllm.v1.engine.llm_engine.LLMEngine"})
CONSTRUCTORS = ("from_engine_args", "from_vllm_config")


def _one_choice_of_several(ctx) -> bool:
    """Whether the function building the engine is used in this file only where a setting picks it among other
    values (`if args.eval_task == "generate_vllm": batch_generate_vllm(args)`, openrlhf 0.5.9
    cli/batch_inference.py:360-361): the engine runs when someone chooses it, which is where the hazard is. A function
    the file never uses (an entry point, a library function) is reported."""
    function = next((a for a in reversed(ctx.ancestors) if isinstance(a, cst.FunctionDef)), None)
    module = ctx.ancestors[0] if ctx.ancestors else None
    if function is None or not isinstance(module, cst.Module):
        return False
    uses: list[bool] = []  # per use of the function's name: under a test that picks a value

    class Uses(cst.CSTVisitor):
        def __init__(self) -> None:
            self.picks = 0

        def visit_If(self, node: cst.If) -> None:
            self.picks += _picks_a_value(node.test)

        def leave_If(self, node: cst.If) -> None:
            self.picks -= _picks_a_value(node.test)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is not function

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == function.name.value:
                uses.append(self.picks > 0)

    module.visit(Uses())
    return bool(uses) and all(uses)


def _picks_a_value(test: cst.BaseExpression) -> int:
    """1 for a test comparing a setting with a string (`args.eval_task == "generate_vllm"`), not `__name__`."""
    for node in _walk(test):
        if isinstance(node, cst.Comparison) and any(isinstance(c.operator, cst.Equal) and isinstance(c.comparator, cst.SimpleString)
                                                     for c in node.comparisons):
            if not (isinstance(node.left, cst.Name) and node.left.value == "__name__"):
                return 1
    return 0


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)


class VllmEngineOnUnsupportedGpu(PythonRule):
    code = "RLC413"
    name = "vllm-engine-on-unsupported-gpu"
    title = "A vLLM engine built in Python on a GPU vLLM does not run on"
    what = (
        "Finds Python that builds a vLLM engine: `LLM(...)`, `LLMEngine(...)`, `AsyncLLMEngine.from_engine_args(...)`, "
        "V1's `AsyncLLM` (the names resolved through the file's imports to `vllm`), as in `trl vllm-serve` "
        "(trl 0.24.0 `trl/scripts/vllm_serve.py:340`) or a user's generation script. RLC407 finds the same on "
        "command lines (`vllm serve`)."
    )
    why = (
        "vLLM supports compute capability 7.5+ (7.0+ in its docs up to v0.14.0) [S7]; below that no wheel has "
        "kernels for the card (`no kernel image is available`) and V1 compiles the model with Inductor, which "
        "refuses capability < 7.0 [S17][S52]."
    )
    fix_safety = "No autofix: generation has to move to another engine (transformers' `generate`) or another card."
    triggers = ("LLM", "vllm")
    sources = ("S7", "S17", "S52")
    prevents = ("E1",)

    bad = (
        Bad("from vllm import LLM, SamplingParams\nllm = LLM(model='Qwen/Qwen2.5-0.5B-Instruct', dtype='float16')\n"),
        Bad("import vllm\nengine = vllm.AsyncLLMEngine.from_engine_args(args)\n", target="sm70"),
        Bad("def generate_vllm(args):\n    from vllm import LLM\n    llm = LLM(model=args.pretrain)\n\n\n"
            "if __name__ == '__main__':\n    generate_vllm(args)\n"),
        Bad("if is_vllm_available():\n    from vllm import LLM\n\n\ndef serve(a):\n    llm = LLM(\n        model=a.model,\n"
            "        dtype=a.dtype,\n    )\n", path="trl/scripts/vllm_serve.py"),
    )
    good = (
        Good("from vllm import LLM\nllm = LLM(model='Qwen/Qwen2.5-0.5B-Instruct', dtype='float16')\n", target="sm75"),
        Good("from langchain.llms import LLM\nllm = LLM()\n"),
        Good("from vllm import SamplingParams\nparams = SamplingParams(max_tokens=16)\n"),
        # One engine among the values of a setting: the hazard is choosing it (openrlhf batch_inference.py:360-361).
        Good("def generate_vllm(args):\n    from vllm import LLM\n    llm = LLM(model=args.pretrain)\n\n\n"
             "if __name__ == '__main__':\n    if args.eval_task == 'generate':\n        generate(args)\n"
             "    if args.eval_task and args.eval_task == 'generate_vllm':\n        generate_vllm(args)\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.vllm

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        name = ctx.qualname(func) or ""
        if isinstance(func, cst.Attribute) and func.attr.value in CONSTRUCTORS:
            name = ctx.qualname(func.value) or ""
        if name not in ENGINES or _one_choice_of_several(ctx):
            return
        shown = name.rsplit(".", 1)[-1]
        ctx.report(func, f"vLLM's {shown} engine is built here: vLLM needs compute capability 7.5+ "
                         f"({self.target.name} is {self.target.capability_text}): no vLLM wheel has kernels for it"
                         f"{' and V1 compiles with Inductor, which refuses capability < 7.0' if self.target.capability < (7, 0) else ''}; "
                         f"generate with transformers (TRL: use_vllm=False) or on a 7.5+ card")
