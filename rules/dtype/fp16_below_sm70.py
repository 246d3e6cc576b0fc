from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule

DS = 'ds_config = {{"train_batch_size": 8, "fp16": {{"enabled": {value}, "loss_scale": 0}}}}\n'


class Fp16BelowSm70(PythonRule):
    code = "RLC113"
    name = "fp16-below-sm70"
    title = "fp16 mixed precision (a trainer flag or DeepSpeed's `fp16.enabled`) on a GPU older than Volta"
    what = (
        "Finds fp16 training switched on below compute capability 7.0: `fp16=True` passed to a call, "
        "`mixed_precision=\"fp16\"`, a DeepSpeed config written as a Python dict with `\"fp16\": {\"enabled\": True}`, "
        "and the default of an argparse option whose name says dtype or precision "
        "(`parser.add_argument(\"--dtype\", default=\"fp16\")`: every run that does not pass it trains in fp16). "
        "DeepSpeed JSON files are not read yet (rlcompat has no JSON front end); their `\"fp16\"` block has the same "
        "effect."
    )
    why = (
        "DeepSpeed refuses fp16 below 7.0 (`ValueError: Type fp16 is not supported on your device.`, older releases "
        "`Type fp16 is not supported.`) unless `DS_ALLOW_DEPRECATED_FP16=1` [S62]; the HF Trainer's `fp16=True` turns "
        "DeepSpeed's `\"auto\"` fp16 on. Without DeepSpeed it runs, but sm61 computes fp16 at 1/64 of fp32 and these "
        "GPUs have no tensor cores [S8][S16]: the precision policy trains in fp32 there (docs/precision.md)."
    )
    fix_safety = "`fp16=False`, `mixed_precision=\"no\"`, `\"enabled\": False`: fp32 training, safe."
    names = ("fp16",)
    # `fp16=True`, `"enabled": True`, `mixed_precision="fp16"`: a value or a keyword, which no declaration names
    requires = (("True", "mixed_precision", "add_argument"),)
    sources = ("S8", "S16", "S62")

    bad = (
        Bad("args = TrainingArguments(output_dir='o', fp16=True)\n", fixed="args = TrainingArguments(output_dir='o', fp16=False)\n"),
        Bad(DS.format(value="True"), target="sm60", fixed=DS.format(value="False")),
        Bad("acc = Accelerator(mixed_precision='fp16')\n", fixed="acc = Accelerator(mixed_precision='no')\n"),
        # an option's default: no rewrite (the program's code decides which words it handles; DeepSpeed-Chat's
        # `--dtype` maps fp16 and bf16 only)
        Bad("parser.add_argument('--dtype', type=str, default='fp16', choices=['fp16', 'bf16'])\n"),
        Bad("parser.add_argument('--mixed-precision', default='fp16')\n"),
    )
    good = (
        Good("args = TrainingArguments(output_dir='o', fp16=True)\n", target="sm70"),
        Good(DS.format(value="False")),
        Good(DS.format(value='"auto"')),
        Good("if dtype == 'fp16':\n    pass\n"),
        Good("parser.add_argument('--dtype', type=str, default='fp16', choices=['fp16', 'bf16'])\n", target="sm70"),
        Good("parser.add_argument('--optimizer', default='fp16')\n"),
        Good("parser.add_argument('--dtype', type=str, default='fp32', choices=['fp32', 'fp16'])\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.cc < 70

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is None:
            return
        key = node.keyword.value
        if key == "fp16" and isinstance(node.value, cst.Name) and node.value.value == "True":
            self._report(node, ctx, "fp16=True", node.value, "False")
        elif key == "mixed_precision" and h.string_value(node.value) == "fp16":
            self._report(node, ctx, 'mixed_precision="fp16"', node.value, h.requote(node.value, "no"))
        elif key == "default" and h.string_value(node.value) in _FP16_WORDS:
            option = _precision_option(ctx.ancestors[-1] if ctx.ancestors else None)
            if option is not None:
                # no rewrite of the default: only the program's own code says whether it handles an fp32 word
                # (DeepSpeed-Chat maps `--dtype` fp16/bf16 only); RLC122 adds the option at a command where the
                # option's literal choices prove it
                self._report(node, ctx, f"{option} defaults to {h.string_value(node.value)}", None, None)

    def visit_DictElement(self, node: cst.DictElement, ctx) -> None:
        if h.string_value(node.key) != "fp16" or not isinstance(node.value, cst.Dict):
            return
        for element in node.value.elements:
            if (isinstance(element, cst.DictElement) and h.string_value(element.key) == "enabled"
                    and isinstance(element.value, cst.Name) and element.value.value == "True"):
                self._report(element, ctx, 'DeepSpeed "fp16": {"enabled": True}', element.value, "False")

    def _report(self, node, ctx, what: str, value_node, new_text: str | None) -> None:
        if h.guarded_by(ctx.ancestors, h.is_capability_guard):
            return
        fix = PendingFix([(value_node, new_text)], FixSafety.SAFE, "train in fp32") if value_node is not None else None
        ctx.report(node, f"{what} on {self.target.name} ({self.target.architecture}): DeepSpeed refuses fp16 below 7.0 "
                         "and these GPUs have no fp16 tensor cores; train in fp32"
                         + ("" if fix else " (pass the option with an fp32 value where the run starts, if the program "
                                           "takes one)"), fix)


# The fp16 spellings an option default is read in.
_FP16_WORDS = frozenset({"fp16", "float16"})  # "float16" only in a file that spells fp16 too (the triggers)
_PRECISION_WORDS = frozenset({"dtype", "precision"})


def _precision_option(call) -> str | None:
    """The long option string of `parser.add_argument("--dtype", ...)` when its name says dtype or precision."""
    if not isinstance(call, cst.Call) or h.call_name(call) != "add_argument":
        return None
    for arg in call.args:
        flag = h.string_value(arg.value) if arg.keyword is None else None
        if flag and flag.startswith("--"):
            words = set(flag.lstrip("-").replace("-", "_").lower().split("_"))
            return flag if words & _PRECISION_WORDS or any(w.endswith("dtype") for w in words) else None
    return None
