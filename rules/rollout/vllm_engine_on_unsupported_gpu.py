from __future__ import annotations

import ast

import libcst as cst

from rlcompat.knowledge.capabilities import min_capability, runs
from rlcompat.contract import Bad, Good, PythonRule
from rlcompat.rules.rollout.helpers import unsupported_message, vllm_argv_word

# vLLM's engine classes a program builds to generate (the offline `LLM`, the V0/V1 engines), and their constructors.
ENGINES = frozenset({"vllm.LLM", "vllm.LLMEngine", "vllm.AsyncLLMEngine", "vllm.entrypoints.llm.LLM",
                     "vllm.engine.llm_engine.LLMEngine", "vllm.engine.async_llm_engine.AsyncLLMEngine",
                     "vllm.v1.engine.async_llm.AsyncLLM", "vllm.v1.engine.llm_engine.LLMEngine"})
CONSTRUCTORS = ("from_engine_args", "from_vllm_config")


def _one_choice_of_several(ctx) -> bool:
    """Whether the function building the engine is used in this file only where a setting picks it among other
    values (`if args.eval_task == "generate_vllm": batch_generate_vllm(args)`, openrlhf 0.5.9
    cli/batch_inference.py:360-361): the engine runs when someone chooses it, which is where the hazard is. A function
    the file never uses (an entry point, a library function) is reported. Read in the whole file (CPython's `ast`;
    the walked module may be narrowed to the statements holding a trigger)."""
    function = next((a for a in reversed(ctx.ancestors) if isinstance(a, cst.FunctionDef)), None)
    if function is None or not ctx.source_text:
        return False
    name = function.name.value
    uses: list[bool] = []  # per use of the function's name: under a test that picks a value

    def visit(node: ast.AST, picked: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return
        if isinstance(node, ast.Name) and node.id == name:
            uses.append(picked)
        if isinstance(node, ast.If):
            visit(node.test, picked)
            inner = picked or _picks_a_value(node.test)
            for child in node.body:
                visit(child, inner)
            for child in node.orelse:
                visit(child, picked)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, picked)

    try:
        for tree in ctx.top_level_trees():  # the whole module's, where the traversal may have been handed a part
            visit(tree, False)
    except (SyntaxError, RecursionError):
        return False
    return bool(uses) and all(uses)


def _picks_a_value(test: ast.AST) -> bool:
    """A test comparing a setting with a string (`args.eval_task == "generate_vllm"`), not `__name__`."""
    return any(isinstance(n, ast.Compare) and any(isinstance(op, ast.Eq) for op in n.ops)
               and any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in n.comparators)
               and not (isinstance(n.left, ast.Name) and n.left.id == "__name__") for n in ast.walk(test))


class VllmEngineOnUnsupportedGpu(PythonRule):
    code = "RLC413"
    name = "vllm-engine-on-unsupported-gpu"
    title = "A vLLM engine built or started from Python on a GPU vLLM does not run on"
    what = (
        "Finds Python that builds a vLLM engine: `LLM(...)`, `LLMEngine(...)`, `AsyncLLMEngine.from_engine_args(...)`, "
        "V1's `AsyncLLM` (the names resolved through the file's imports to `vllm`), as in `trl vllm-serve` "
        "(trl 0.24.0 `trl/scripts/vllm_serve.py:340`) or a user's generation script; and Python that starts vLLM's "
        "server as a command: a list or tuple of argv words naming a `vllm.entrypoints` module or `vllm serve` "
        "(trl 1.16.0 `trl/scripts/vllm_serve.py:226-230`, run with `os.execve` at :293). RLC407 finds the same on "
        "command lines (`vllm serve`). An engine built inside a class is a backend something else selects (verl's "
        "vLLM rollout server by `rollout.name=vllm`, OpenRLHF's vLLM actors by `--vllm_num_engines`): RLC401/RLC404 "
        "report that choice, so the class is left alone; so is a function this file runs only when a setting picks "
        "it among other values."
    )
    why = (
        f"{min_capability('vllm').by_release()} [S7]; below its minimum a release's wheels have no kernels "
        "for the card (`no kernel image is available`), and below 7.0 V1 also compiles the model with Inductor, "
        "which refuses the card [S17][S52]."
    )
    fix_safety = ("No autofix: generation has to move to an older vLLM that still runs on the card (a V100: the "
                  "release named in the message), another engine (transformers' `generate`) or another card.")
    # The calls (imports are always kept), and argv words: a module of vLLM's server, or `vllm` and `serve` (each a
    # trigger, so that narrowing inside a big list keeps both elements).
    names = ("LLM(", "LLMEngine", "AsyncLLM", "vllm.entrypoints")
    strings = ("vllm", "serve")
    # engines resolve through imports of vllm; an argv command (`["vllm", "serve", ...]`) spells the word too
    resolves_from = ("vllm",)
    sources = ("S7", "S17", "S52")
    prevents = ("E1",)

    bad = (
        Bad("from vllm import LLM, SamplingParams\nllm = LLM(model='Qwen/Qwen2.5-0.5B-Instruct', dtype='float16')\n"),
        Bad("import vllm\nengine = vllm.AsyncLLMEngine.from_engine_args(args)\n", target="sm70"),
        Bad("def generate_vllm(args):\n    from vllm import LLM\n    llm = LLM(model=args.pretrain)\n\n\n"
            "if __name__ == '__main__':\n    generate_vllm(args)\n"),
        Bad("if is_vllm_available():\n    from vllm import LLM\n\n\ndef serve(a):\n    llm = LLM(\n        model=a.model,\n"
            "        dtype=a.dtype,\n    )\n", path="trl/scripts/vllm_serve.py"),
        # trl 1.16.0 trl/scripts/vllm_serve.py:226-230, :293: vLLM's server started as a command
        Bad("import os, sys\n\n\ndef build_command(a):\n    command = [\n        sys.executable,\n        \"-m\",\n"
            "        \"vllm.entrypoints.cli.main\",\n        \"serve\",\n        a.model,\n    ]\n    return command\n\n\n"
            "def main(a):\n    os.execve(sys.executable, build_command(a), os.environ.copy())\n",
            path="trl/scripts/vllm_serve.py"),
        Bad("import subprocess\nsubprocess.run(('vllm', 'serve', 'Qwen/Qwen2.5-0.5B-Instruct', '--dtype', 'half'))\n"),
    )
    good = (
        Good("from vllm import LLM\nllm = LLM(model='Qwen/Qwen2.5-0.5B-Instruct', dtype='float16')\n", target="sm75"),
        Good("from langchain.llms import LLM\nllm = LLM()\n"),
        Good("from vllm import SamplingParams\nparams = SamplingParams(max_tokens=16)\n"),
        Good("import subprocess\nsubprocess.run(['python', '-m', 'vllm.entrypoints.openai.api_server', '--model', 'm'])\n",
             target="sm75"),
        Good("subprocess.run(['pip', 'install', 'vllm'])\nnames = ['vllm', 'sglang']\n"),
        Good("import vllm\n\n\nclass LLMRayActor:\n    def __init__(self, model):\n        self.llm = vllm.LLM(model)\n"),
        # One engine among the values of a setting: the hazard is choosing it (openrlhf batch_inference.py:360-361).
        Good("def generate_vllm(args):\n    from vllm import LLM\n    llm = LLM(model=args.pretrain)\n\n\n"
             "if __name__ == '__main__':\n    if args.eval_task == 'generate':\n        generate(args)\n"
             "    if args.eval_task and args.eval_task == 'generate_vllm':\n        generate_vllm(args)\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not runs("vllm", target)

    def visit_List(self, node: cst.List, ctx) -> None:
        self._argv(node, ctx)

    def visit_Tuple(self, node: cst.Tuple, ctx) -> None:
        self._argv(node, ctx)

    def _argv(self, node: cst.List | cst.Tuple, ctx) -> None:
        values = [e.value for e in node.elements]
        words = [v.evaluated_value if isinstance(v, cst.SimpleString) and isinstance(v.evaluated_value, str) else None
                 for v in values]
        at = vllm_argv_word(words)
        if at is None or any(isinstance(a, cst.ClassDef) for a in ctx.ancestors) or _one_choice_of_several(ctx):
            return  # not vLLM's command, or one run by a backend class or chosen among several: reported there
        ctx.report(values[at], f"vLLM is started here as a command (`{words[at]}`): "
                               f"{unsupported_message(self.target)}")

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        name = ctx.qualname(func) or ""
        if isinstance(func, cst.Attribute) and func.attr.value in CONSTRUCTORS:
            name = ctx.qualname(func.value) or ""
        if name not in ENGINES or any(isinstance(a, cst.ClassDef) for a in ctx.ancestors) or _one_choice_of_several(ctx):
            return  # a backend class or one choice among several: reported where it is chosen
        shown = name.rsplit(".", 1)[-1]
        instead = (f"generate with transformers (TRL: use_vllm=False) or on a {min_capability('vllm').text}+ card")
        ctx.report(func, f"vLLM's {shown} engine is built here: {unsupported_message(self.target, instead)}")
