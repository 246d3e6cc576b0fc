from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule


class Tf32BelowSm80(PythonRule):
    code = "RLC112"
    name = "tf32-below-sm80"
    title = "`tf32=True` for a trainer on a GPU without TF32 (below Ampere)"
    what = (
        "Finds `tf32=True` passed to a call (transformers `TrainingArguments`, TRL configs). "
        "`torch.backends.cuda.matmul.allow_tf32 = True` is not reported: torch ignores it where there is no TF32."
    )
    why = (
        "transformers refuses the flag before training starts on compute capability < 8.0: `ValueError: --tf32 "
        "requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7` [S61]."
    )
    fix_safety = "`tf32=False`: safe, fp32 matmuls stay fp32, which is all these GPUs do anyway."
    names = ("tf32",)
    sources = ("S61",)

    bad = (
        Bad("args = TrainingArguments(output_dir='o', tf32=True, fp16=True)\n", target="sm75",
            fixed="args = TrainingArguments(output_dir='o', tf32=False, fp16=True)\n"),
        Bad("cfg = GRPOConfig(tf32=True)\n", fixed="cfg = GRPOConfig(tf32=False)\n"),
    )
    good = (
        Good("args = TrainingArguments(output_dir='o', tf32=True)\n", target="sm80"),
        Good("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", target="sm70"),
        Good("args = TrainingArguments(output_dir='o', tf32=False)\n", target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.cc < 80

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is None or node.keyword.value != "tf32":
            return
        if not (isinstance(node.value, cst.Name) and node.value.value == "True"):
            return
        if h.guarded_by(ctx.ancestors, h.is_capability_guard):
            return
        ctx.report(node, f"tf32=True on {self.target.name} ({self.target.architecture}): transformers raises "
                         "`--tf32 requires Ampere or a newer GPU arch`; set tf32=False",
                   PendingFix([(node.value, "False")], FixSafety.SAFE, "set tf32=False"))
