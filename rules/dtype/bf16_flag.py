from __future__ import annotations

import libcst as cst

from rlcompat.knowledge import precision
from rlcompat.analysis.pyswitches import switched_on
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule


class Bf16Flag(PythonRule):
    code = "RLC103"
    name = "bf16-flag"
    title = "`bf16=True` switched on for a trainer on a GPU without bf16"
    what = (
        "Finds `bf16=True` passed to a call (transformers `TrainingArguments`, TRL's `GRPOConfig`/`PPOConfig`/"
        "`SFTConfig`, OpenRLHF strategies) or assigned to a `bf16` attribute."
    )
    why = (
        "It turns on bf16 mixed precision. On compute capability < 8.0 there is no bf16 hardware [S1]; since torch 2.3 "
        "`is_bf16_supported()` says True there by emulation, so transformers no longer stops the run with its "
        "`Your setup doesn't support bf16/gpu` error [S3][S15] and training runs slow or fails later in fused kernels."
    )
    fix_safety = (
        "The flag is an autocast switch; the fix follows the precision policy (docs/precision.md). On sm5x/sm6x it "
        "writes `bf16=False` (fp32 training, no autocast): safe, and `fp16=True` is never offered there (slow fp16, "
        "DeepSpeed refuses it [S62]). On sm70/sm75 it writes `fp16=True`: fp16 autocast under the trainer's loss scaler, "
        "which is unsafe because fp16 overflows above 65504 where bf16 did not (bf16-pretrained models can turn NaN "
        "[S66]). It trains only with fp32 weights: RLC108 reports fp16/bf16 weights in the same file [S60]."
    )
    names = ("bf16",)
    requires = (("True",),)  # a switch set to the literal True: a value, which no declaration names
    sources = ("S1", "S3", "S15", "S60", "S62", "S66")

    bad = (
        Bad("args = TrainingArguments(output_dir='o', bf16=True)\n",
            fixed="args = TrainingArguments(output_dir='o', bf16=False)\n"),
        Bad("cfg = GRPOConfig(bf16=True, learning_rate=1e-6)\n", target="sm75", unsafe=True,
            fixed="cfg = GRPOConfig(fp16=True, learning_rate=1e-6)\n"),
        Bad("args.bf16 = True\n", fixed="args.bf16 = False\n"),
        # verl 0.9.1 utils/megatron_utils.py: renaming bf16 to fp16 here would repeat the `fp16` keyword
        Bad("cfg = ModelParallelConfig(bf16=True, fp16=False, timers=None)\n", target="sm70", unsafe=True,
            fixed="cfg = ModelParallelConfig(bf16=False, fp16=True, timers=None)\n"),
    )
    good = (
        Good("args = TrainingArguments(output_dir='o', bf16=False)\n"),
        Good("args = TrainingArguments(output_dir='o', bf16=True)\n", target="sm86"),
        Good("parser.add_argument('--bf16', action='store_true')\n"),
        Good("if args.bf16 == True:\n    pass\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Arg(self, node: cst.Arg, ctx) -> None:
        if node.keyword is None or node.keyword.value != "bf16" or not switched_on(node.value, ctx.ancestors):
            return
        if precision.dtype_for(self.target, "autocast") == "float16":
            call = ctx.ancestors[-1] if ctx.ancestors else None
            fp16 = [a for a in getattr(call, "args", ()) if a.keyword is not None and a.keyword.value == "fp16"]
            if fp16:  # `bf16=True, fp16=False`: renaming would repeat the keyword (a SyntaxError); flip both values
                fix = PendingFix([(node.value, "False"), (fp16[0].value, "True")], FixSafety.UNSAFE,
                                 "use bf16=False, fp16=True")
            else:
                fix = PendingFix([(node.keyword, "fp16")], FixSafety.UNSAFE, "use fp16=True")
        else:
            fix = PendingFix([(node.value, "False")], FixSafety.SAFE, "use bf16=False (fp32)")
        ctx.report(node, self._message(fix.description), fix)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if not any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "bf16" for t in node.targets):
            return
        if not switched_on(node.value, ctx.ancestors):
            return
        if precision.dtype_for(self.target, "autocast") == "float16":
            ctx.report(node, self._message("set fp16 = True instead"))  # two statements to change: report only
        else:
            ctx.report(node, self._message("set it to False"),
                       PendingFix([(node.value, "False")], FixSafety.SAFE, "set bf16 = False (fp32)"))

    def _message(self, advice: str) -> str:
        return f"bf16 mixed precision switched on: {self.target.name} ({self.target.architecture}) has no bf16 hardware; {advice}"
