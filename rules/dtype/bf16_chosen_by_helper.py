from __future__ import annotations

import os

import libcst as cst

from rlcompat.analysis import tree_helpers
from rlcompat.contract import ANY_MODULE, Bad, Good, PythonRule
from rlcompat.knowledge import bf16_helpers

_LITGPT = "from litgpt.utils import get_default_supported_precision\n"


class Bf16ChosenByHelper(PythonRule):
    code = "RLC136"
    name = "bf16-chosen-by-helper"
    title = "A precision taken from a helper that picks bf16 by `is_bf16_supported()`, true by emulation"
    what = (
        "Finds a call of a function that returns a bf16 value (`\"bf16-mixed\"`, `torch.bfloat16`) under a "
        "`torch.cuda.is_bf16_supported()` test without `including_emulation=False`: an installed package's helper "
        "that rlcompat/knowledge/data/bf16_helpers.toml names (litgpt's `get_default_supported_precision`, "
        "litgpt/utils.py:363-380), or a function the file imports from its own project's modules, read from the "
        "tree's files (never imported). RLC110 reports the test itself in a helper's own file."
    )
    why = (
        "Since torch 2.3 `is_bf16_supported()` says True on cards that only emulate bf16 [S3]; torch 2.4 added "
        "`including_emulation`, defaulting to True [S60]. The helper then picks bf16 below compute capability 8.0, "
        "where bf16 has no hardware (emulated, slow) [S1], and every caller trains in it (litgpt/pretrain.py:127 "
        "[S163])."
    )
    fix_safety = (
        "No fix at the call: the choice is the helper's. In a project's own helper `rlcompat fix` adds "
        "`including_emulation=False` (RLC110, safe); otherwise pass the precision explicitly (fp16 mixed on "
        "sm70/sm75, fp32 below)."
    )
    # A helper's result lands in a name that says what it is (`precision = ...`) or comes from a function named for
    # it (`pick_dtype()`): not every statement that says `dtype` (a model file has thousands; keeping them all made
    # transformers' modeling_utils.py big enough to be parsed in parts, for nothing this rule can report).
    names = ("precision", "dtype(")
    resolves_from = (ANY_MODULE,)  # a helper the file imports (`ctx.qualname`)
    sources = ("S1", "S3", "S60", "S163")

    bad = (
        Bad(_LITGPT + "precision = precision or get_default_supported_precision(training=True)\n", target="sm75"),
        Bad("import litgpt.utils as lu\nfabric_precision = lu.get_default_supported_precision(False)\n"),
        Bad("from litgpt.utils import get_default_supported_precision as pick_dtype\nd = pick_dtype(True)\n"),
    )
    good = (
        Good(_LITGPT + "precision = precision or get_default_supported_precision(training=True)\n", target="sm80"),
        Good("from mypkg.utils import default_precision\nprecision = default_precision()\n", target="sm75"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Call(self, node: cst.Call, ctx) -> None:
        dotted = ctx.qualname(node.func) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
        if not dotted or "." not in dotted:
            return
        module, function = dotted.rsplit(".", 1)
        scanned = ctx.scanned
        root = getattr(getattr(scanned, "tree", None), "root", None)
        path = tree_helpers.module_file(root, module) if root else None
        if path is not None:  # the tree's own code (its release of a helper the knowledge names, too)
            if os.path.abspath(path) == os.path.abspath(ctx.path):
                return  # RLC110 reports the test in this file
            scanned.record_reads([path])
            pick = tree_helpers.bf16_pick(path, function)
            if pick is not None:
                self._report(node, ctx, function, pick.value, f"{os.path.relpath(pick.path, root)}:{pick.probe_line}")
            return
        known = bf16_helpers.helpers().get(dotted)
        if known is not None:
            self._report(node, ctx, function, known.returns, known.proof)

    def _report(self, node, ctx, function: str, returns: str, where: str) -> None:
        ctx.report(node, f"{function}() returns {returns} when torch.cuda.is_bf16_supported() is true ({where}), and "
                         f"on {self.target.name} ({self.target.capability_text}) it is true by emulation: this takes "
                         f"bf16, which has no hardware below 8.0; choose the precision here, or pass "
                         f"including_emulation=False in the helper")
