"""Programs whose models never leave the CPU, so that a dtype flag's default there selects nothing a GPU lacks.

OpenRLHF's `openrlhf/cli/lora_combiner.py` (0.9.10, 0.11.2) declares `--ds.param_dtype` with default "bf16", loads the
base model with `from_pretrained(..., torch_dtype=..., low_cpu_mem_usage=True)` (no `device_map`), merges the LoRA
adapter and saves: transformers loads onto the CPU unless told otherwise, and bfloat16 works on any CPU. The same
flag in a training program is a GPU hazard; what tells the two apart is read from the program's own text.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

# Any of these words puts (or may put) a model on a GPU, or hands the run to code that does: a device or placement,
# a launcher, a trainer, an engine, distributed setup. Matched anywhere in the text, comments included, so that a
# program that only mentions one is not taken for a CPU program (the cost of a wrong "CPU" is a missed hazard).
_GPU_WORDS = re.compile(
    r"cuda|gpu|device|\.to\(|deepspeed|accelerat|trainer|fabric|lightning|vllm|sglang|\bLLM\b|strategy|distributed|"
    r"nccl|torchrun|launch|ray\b|pipeline\(",
    re.IGNORECASE,
)


# builtins that read a namespace without running anything of it
_READERS = frozenset({"getattr", "hasattr", "setattr", "vars", "print", "str", "repr"})


@lru_cache(maxsize=32)
def runs_on_cpu_only(text: str) -> bool:
    """A program (`if __name__ == "__main__":`) that loads a model with `from_pretrained`, names no GPU device,
    launcher, trainer or engine anywhere (`_GPU_WORDS`), and hands its parsed arguments as a whole (`f(args)`) only
    to functions it defines itself: whatever it runs, it runs where transformers loads by default, the CPU."""
    if "__main__" not in text or "from_pretrained" not in text or _GPU_WORDS.search(text):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))} | _READERS
    namespaces = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _reads_parse_args(n.value)
                  for t in n.targets if isinstance(t, ast.Name)}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        passed = [a for a in [*call.args, *(k.value for k in call.keywords)]
                  if isinstance(a, ast.Name) and a.id in namespaces]
        if passed and not (isinstance(call.func, ast.Name) and call.func.id in own):
            return False  # the whole namespace goes to code this file does not show
    return True


def _reads_parse_args(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "parse_args"
               for n in ast.walk(node))
