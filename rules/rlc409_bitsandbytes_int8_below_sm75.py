from __future__ import annotations

import libcst as cst

from rlcompat.lang.python import PythonRule
from rlcompat.rule import Bad, Good


class BitsandbytesInt8BelowSm75(PythonRule):
    code = "RLC409"
    name = "bitsandbytes-int8-below-sm75"
    title = "bitsandbytes 8-bit (`load_in_8bit=True`) on a GPU without int8 tensor cores (below 7.5)"
    what = "Finds `load_in_8bit=True` (transformers' `BitsAndBytesConfig` and `from_pretrained`) on targets below 7.5."
    why = (
        "bitsandbytes' fast 8-bit matmul needs int8 tensor cores (capability 7.5+, `has_imma`); below that it "
        "warns `Only slow 8-bit matmul is supported for your GPU!` and falls back to a slow path [S60]."
    )
    fix_safety = "No autofix: 4-bit (`load_in_4bit=True`) or fp16 weights are the alternatives, with other numerics."
    triggers = ("load_in_8bit",)
    sources = ("S60",)
    severity = "warning"

    bad = (
        Bad("cfg = BitsAndBytesConfig(load_in_8bit=True)\n", target="sm70"),
        Bad("m = AutoModelForCausalLM.from_pretrained(p, load_in_8bit=True)\n", target="sm61"),
    )
    good = (
        Good("cfg = BitsAndBytesConfig(load_in_8bit=True)\n", target="sm75"),
        Good("cfg = BitsAndBytesConfig(load_in_8bit=False, load_in_4bit=True)\n", target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bnb_int8_fast

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is None or node.keyword.value != "load_in_8bit":
            return
        if isinstance(node.value, cst.Name) and node.value.value == "True":
            ctx.report(node, f"bitsandbytes 8-bit matmul needs int8 tensor cores (7.5+); on {self.target.name} "
                             f"({self.target.capability_text}) it runs a slow fallback")
