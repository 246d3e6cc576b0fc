from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule
from rlcompat.knowledge import config_class_defaults, precision

_VF = "import verifiers as vf\n"
KIND = "bf16-switch"  # this rule's rows of config_class_defaults.toml (RLC125 reads the others)


class ConfigBf16DefaultOn(PythonRule):
    code = "RLC134"
    name = "config-bf16-default-on"
    title = "A trainer config whose class turns bf16 on by default, built without `bf16` or `fp16`"
    what = (
        "Finds calls of trainer config classes that rlcompat/knowledge/data/config_class_defaults.toml names as `bf16-switch` rows "
        "(TrainingArguments subclasses whose `bf16` field defaults to True: verifiers' `RLConfig`, "
        "verifiers/rl/trainer/config.py:216-217) built without a `bf16=` or `fp16=` keyword and without `**kwargs` "
        "that could carry one. RLC107 reports the field's default in the class' own file; RLC111 TRL's configs."
    )
    why = (
        "The class' default turns bf16 autocast on, and transformers accepts it because `torch.cuda.is_bf16_supported()` "
        "says True on cards that only emulate bf16 (torch >= 2.3) [S1][S15]: the run trains in emulated bf16 below "
        "compute capability 8.0 without the script saying bf16 [S380]."
    )
    fix_safety = (
        "Adds the precision policy's autocast choice (docs/precision.md): `bf16=False` on sm5x/sm6x (fp32 training, "
        "safe); `bf16=False, fp16=True` on sm70/sm75, unsafe: fp16 autocast has a smaller range than bf16 [S66]. "
        "Both are fields of TrainingArguments, which these classes subclass."
    )
    calls = config_class_defaults.class_names(frozenset({KIND}))
    sources = ("S1", "S15", "S66", "S380")

    bad = (
        Bad(_VF + "args = vf.RLConfig(run_name='r', batch_size=256)\n",
            fixed=_VF + "args = vf.RLConfig(run_name='r', batch_size=256, bf16=False)\n"),
        Bad("from verifiers import RLConfig\nargs = RLConfig()\n", target="sm75", unsafe=True,
            fixed="from verifiers import RLConfig\nargs = RLConfig(bf16=False, fp16=True)\n"),
    )
    good = (
        Good(_VF + "args = vf.RLConfig(run_name='r', bf16=False)\n"),
        Good(_VF + "args = vf.RLConfig(run_name='r', fp16=True)\n", target="sm75"),
        Good(_VF + "args = vf.RLConfig(**cfg)\n"),
        Good(_VF + "args = vf.RLConfig(run_name='r')\n", target="sm80"),
        Good("class RLConfig:\n    pass\nargs = RLConfig()\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = h.call_name(node)
        if name not in self.calls:
            return
        known = config_class_defaults.called(ctx.qualname(node.func), kinds=frozenset({KIND}),
                                             release_of=config_class_defaults.release_in(ctx))
        if known is None:
            return
        if any(a.star or (a.keyword is not None and a.keyword.value in ("bf16", "fp16")) for a in node.args):
            return
        fp16 = precision.dtype_for(self.target, "autocast") == "float16"
        added = [("bf16", "False")] + ([("fp16", "True")] if fp16 else [])
        text = h.with_keywords(node, added)
        spelled = ", ".join(f"{k}={v}" for k, v in added)
        ctx.report(node, f"{name} sets neither bf16 nor fp16, so its default bf16=True ({known.release}: "
                         f"{known.proof.split(' (')[0]}) trains in bf16, which {self.target.name} "
                         f"({self.target.architecture}) only emulates; set {spelled}",
                   PendingFix([(node, text)], FixSafety.UNSAFE if fp16 else FixSafety.SAFE, f"add {spelled}"))
