from __future__ import annotations

import ast
from functools import lru_cache

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, Good, PythonRule
from rlcompat.knowledge import trainer_precision

_ARGS = (
    "from typing_extensions import TypedDict\n\n"
    "def trainer_config(output_dir):\n"
    "    return TrainerArgs(\n        learning_rate=5e-6,\n        output_dir=output_dir,{extra}\n    )\n\n"
    "class TrainerArgs(TypedDict, total=False):\n    output_dir: str\n    learning_rate: float\n{fields}"
)
_SWITCHES = "    bf16: bool\n    fp16: bool\n"
_CLI = (
    "def run(args):\n    from transformers import TrainingArguments\n    from unsloth import is_bfloat16_supported\n"
    "    return TrainingArguments(\n        max_steps=args.max_steps,\n        fp16=not {probe}(),\n"
    "        bf16=is_bfloat16_supported(),\n    )\n"
)
_UNSLOTH = {"unsloth": "2025.5.1"}


class UnslothTrainerFp16Default(PythonRule):
    code = "RLC126"
    name = "unsloth-trainer-fp16-default"
    title = "Trainer arguments for Unsloth's patched TRL trainer train in fp16 on a card without fp16 speed"
    what = (
        "Finds, in a tree that runs an Unsloth release whose patched trainers take the precision from the model "
        "(rlcompat/knowledge/data/trainer_precision.toml), a call building trainer arguments, a `TypedDict` of the "
        "module that declares both `bf16` and `fp16` (the keys of TRL's config it is passed to), that switches "
        "neither on, or whose `fp16` is the negation of that release's bf16 probe (`fp16=not is_bfloat16_supported()`, "
        "Unsloth's own CLI: the probe asks for capability 8.0) (a call passing none of the usual keys, `output_dir`, `learning_rate`, `per_device_train_batch_size`, "
        "`gradient_accumulation_steps`, `num_train_epochs`, `max_steps`, `num_generations`, is not read). Reported on a "
        "card without fp16 speed (sm6x but sm60) where that release loads float16."
    )
    why = (
        "Unsloth 2025.5.1 loads the model in float16 below compute capability 8.0 and its patched TRL trainer then "
        "sets `fp16=True` when neither switch is on [S310]; fp16 arithmetic runs at 1/64 of the fp32 rate on compute "
        "capability 6.1 with no tensor cores [S8]."
    )
    fix_safety = "No fix: no trainer argument avoids it, and Unsloth's loader takes no float32 dtype [S310]."
    # TrainingArguments keys one of which a call building trainer arguments passes (a call passing none is not read)
    keywords = ("output_dir", "learning_rate", "per_device_train_batch_size", "gradient_accumulation_steps",
                "num_train_epochs", "max_steps", "num_generations", "fp16")
    # A call it reports builds a TypedDict class of its own module, or negates the release's bf16 probe (Unsloth's
    # `is_bfloat16_supported`, trainer_precision.toml `probe`): the file spells one of the two. Without the gate a
    # file that only mentions fp16 (torch's 1.4 MB op table) kept and walked every statement spelling it.
    requires = (("TypedDict", "is_bfloat16_supported"),)
    sources = ("S8", "S310")

    bad = (
        Bad(_CLI.format(probe="is_bfloat16_supported"), path="unsloth-cli.py", frameworks=_UNSLOTH),
        Bad(_ARGS.format(extra="", fields=_SWITCHES), path="art/dev/model.py", frameworks=_UNSLOTH),
        Bad(_ARGS.format(extra="\n        fp16=False,", fields=_SWITCHES), path="art/dev/model.py", frameworks=_UNSLOTH),
    )
    good = (
        Good(_CLI.format(probe="is_bfloat16_supported"), path="unsloth-cli.py", target="sm75", frameworks=_UNSLOTH),
        # torch's probe says True by emulation on sm61: fp16 stays off there (bf16 is RLC110's)
        Good(_CLI.format(probe="torch.cuda.is_bf16_supported").replace("from unsloth import is_bfloat16_supported\n", "import torch\n"),
             path="unsloth-cli.py", frameworks=_UNSLOTH),
        Good(_ARGS.format(extra="", fields=_SWITCHES), path="art/dev/model.py", target="sm75", frameworks=_UNSLOTH),
        # a release not read (what it loads below 8.0 is not known here)
        Good(_ARGS.format(extra="", fields=_SWITCHES), path="art/dev/model.py", frameworks={"unsloth": "2025.10.1"}),
        Good(_ARGS.format(extra="", fields=_SWITCHES), path="art/dev/model.py"),
        # not a trainer's arguments: no precision switches declared
        Good(_ARGS.format(extra="", fields=""), path="art/dev/model.py", frameworks=_UNSLOTH),
        # the fp16 switch written on: reported where it is written (RLC113's construct), not here
        Good(_ARGS.format(extra="\n        fp16=True,", fields=_SWITCHES), path="art/dev/model.py", frameworks=_UNSLOTH),
        Good(_ARGS.format(extra="\n        **extra,", fields=_SWITCHES), path="art/dev/model.py", frameworks=_UNSLOTH),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.fp16_slow

    def visit_Call(self, node: cst.Call, ctx) -> None:
        probed = next((a for a in node.args if a.keyword is not None and a.keyword.value == "fp16"
                       and isinstance(a.value, cst.UnaryOperation) and isinstance(a.value.operator, cst.Not)
                       and isinstance(a.value.expression, cst.Call)), None)
        typed = isinstance(node.func, cst.Name) and node.func.value in _trainer_arg_types(ctx.source_text)
        if probed is None and not typed:
            return
        row = trainer_precision.loads_float16("unsloth", ctx.release("unsloth"), self.target.capability)
        if row is None:
            return
        if probed is not None:
            if row.probe and ctx.qualname(probed.value.expression.func) == row.probe:
                ctx.report(probed, f"fp16=not {row.probe.rsplit('.', 1)[-1]}() turns fp16 on below compute capability "
                                   f"{'.'.join(map(str, row.float16_below))}: {row.label} {row.release}'s probe asks "
                                   f"for the capability ({row.label} {row.release} knowledge: {row.probe_proof}); fp16 "
                                   f"runs at 1/64 of the fp32 rate on {self.target.name} "
                                   f"({self.target.capability_text}), which has no tensor cores [S8]; {row.remedy}")
            return
        for arg in node.args:
            if arg.star:
                return  # keys it cannot see
            if (arg.keyword is not None and arg.keyword.value in ("bf16", "fp16")
                    and not (isinstance(arg.value, cst.Name) and arg.value.value == "False")):
                return  # a switch written on (or computed) is judged where it is written
        ctx.report(node, f"{h.call_name(node)}(...) switches neither bf16 nor fp16 on, so {row.label} {row.release}'s "
                         f"patched trainer trains in fp16, the dtype it loads the model in below compute capability "
                         f"{'.'.join(map(str, row.float16_below))} ({row.label} {row.release} knowledge: {row.proof}): "
                         f"fp16 runs at 1/64 of the fp32 rate on {self.target.name} ({self.target.capability_text}), "
                         f"which has no tensor cores [S8]; {row.remedy}")


@lru_cache(maxsize=8)
def _trainer_arg_types(text: str) -> frozenset[str]:
    """Classes of the module that subclass TypedDict and declare both `bf16` and `fp16`: trainer arguments."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return frozenset()
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases}
        fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
        if "TypedDict" in bases and {"bf16", "fp16"} <= fields:
            found.add(node.name)
    return frozenset(found)
