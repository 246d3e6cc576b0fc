from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, Good, PythonRule


class Fp8TrainingBelowSm89(PythonRule):
    code = "RLC408"
    name = "fp8-training-below-sm89"
    title = "fp8 compute (TransformerEngine `fp8_autocast`, accelerate `mixed_precision=\"fp8\"`) on a GPU below 8.9"
    what = (
        "Finds TransformerEngine's `fp8_autocast(...)` (unless `enabled=False`) and `Accelerator(mixed_precision="
        "\"fp8\")` / `mixed_precision=\"fp8\"` keywords, on targets whose `fp8` fact is false (below 8.9)."
    )
    why = (
        "fp8 matrix multiplies need Ada or Hopper: TransformerEngine asserts `Device compute capability 8.9 or higher "
        "required for FP8 execution.` [S69]; Triton's fp8e4nv type needs 8.9 too [S20]. `fp8_autocast` defaults "
        "to enabled in newer TransformerEngine releases [S69]."
    )
    fix_safety = "No autofix: the run has to use bf16/fp16/fp32 instead, a choice with its own hazards (RLC1xx)."
    names = ("fp8_autocast", 'mixed_precision="fp8"', "mixed_precision='fp8'")
    sources = ("S20", "S69")
    prevents = ("X11",)

    bad = (
        Bad("import transformer_engine.pytorch as te\nwith te.fp8_autocast(enabled=True, fp8_recipe=recipe):\n"
            "    out = model(x)\n", target="sm86"),
        Bad("with fp8_autocast():\n    out = model(x)\n", target="sm80"),
        Bad('accelerator = Accelerator(mixed_precision="fp8")\n', target="sm75"),
    )
    good = (
        Good("with te.fp8_autocast(enabled=True):\n    out = model(x)\n", target="sm89"),
        Good("with te.fp8_autocast(enabled=False):\n    out = model(x)\n", target="sm80"),
        Good('accelerator = Accelerator(mixed_precision="fp16")\n', target="sm75"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.fp8

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = h.call_name(node)
        where = f"{self.target.name} is {self.target.capability_text}"
        if name == "fp8_autocast":
            enabled = next((a.value for a in node.args if a.keyword and a.keyword.value == "enabled"), None)
            if isinstance(enabled, cst.Name) and enabled.value == "False":
                return
            ctx.report(node, f"fp8_autocast runs matmuls in fp8, which needs compute capability 8.9+ ({where}): "
                             f"`Device compute capability 8.9 or higher required for FP8 execution.`")
            return
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "mixed_precision" and h.string_value(arg.value) == "fp8":
                ctx.report(arg, f"mixed_precision=\"fp8\" (TransformerEngine or torchao fp8 under accelerate) needs "
                                f"compute capability 8.9+ ({where})")
