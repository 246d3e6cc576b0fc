from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, Good, PythonRule


class BnbInt8BelowSm75(PythonRule):
    code = "RLC114"
    name = "bnb-int8-below-sm75"
    title = "bitsandbytes 8-bit loading (`load_in_8bit=True`) on a GPU below 7.5"
    what = (
        "Finds `load_in_8bit=True` (`BitsAndBytesConfig`, `from_pretrained`) below compute capability 7.5. "
        "`bnb_4bit_compute_dtype=torch.bfloat16` is reported by RLC101/RLC102 with the policy's compute dtype. "
        "A `True` under a branch that tests an 8-bit switch (`elif model_args.load_in_8bit:` in TRL's and "
        "alignment-handbook's `get_quantization_config`) only passes on what the user set: that switch, where it is "
        "set, decides the run, as for bf16 and FlashAttention switches."
    )
    why = (
        "LLM.int8() needs int8 tensor cores, compute capability 7.5+; below that bitsandbytes warns `Compute "
        "capability < 7.5 detected! Only slow 8-bit matmul is supported for your GPU!` and runs a slow fallback "
        "(8-bit optimizers and NF4/FP4 need only 6.0) [S64]."
    )
    fix_safety = (
        "No automatic fix: 4-bit quantization (`load_in_4bit=True`) or unquantized fp16/fp32 weights change memory "
        "and accuracy, a choice for the user."
    )
    severity = "warning"
    keywords = ("load_in_8bit",)
    sources = ("S64",)

    bad = (
        Bad("q = BitsAndBytesConfig(load_in_8bit=True)\n", target="sm70"),
        Bad("m = AutoModelForCausalLM.from_pretrained(p, load_in_8bit=True)\n"),
    )
    good = (
        Good("q = BitsAndBytesConfig(load_in_8bit=True)\n", target="sm75"),
        Good("q = BitsAndBytesConfig(load_in_4bit=True)\n", target="sm70"),
        Good("def quantization(args):\n    if args.load_in_4bit:\n        return BitsAndBytesConfig(load_in_4bit=True)\n"
             "    elif args.load_in_8bit:\n        return BitsAndBytesConfig(load_in_8bit=True)\n", target="sm70"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.cc < 75

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is None or node.keyword.value != "load_in_8bit":
            return
        if not (isinstance(node.value, cst.Name) and node.value.value == "True"):
            return
        if h.guarded_by(ctx.ancestors, h.is_capability_guard) or h.test_mentions(ctx.ancestors, ("8bit", "int8")):
            return
        ctx.report(node, f"load_in_8bit=True on {self.target.name} ({self.target.architecture}): LLM.int8() needs "
                         "7.5+; bitsandbytes falls back to a slow 8-bit matmul (consider load_in_4bit=True)")
