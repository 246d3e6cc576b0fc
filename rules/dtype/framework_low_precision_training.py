from __future__ import annotations

from rlcompat.analysis.knowledgecheck import DataExamples, check
from rlcompat.contract import ConfigRule

KINDS = frozenset({"low-precision-training"})


class FrameworkLowPrecisionTraining(ConfigRule):
    code = "RLC135"
    name = "framework-low-precision-training"
    title = "A framework's fp8 or MX training converter (from rlcompat's framework knowledge) below compute capability 8.9"
    what = (
        "Reads rlcompat/knowledge/data/frameworks/: keys of kind `low-precision-training` (torchtitan's `model.converters` with "
        "`quantize.linear.float8`, `quantize.grouped_mm.float8` or the MX converters, in a TOML train config or as "
        "a `--model.converters` flag) and reports a converter the target cannot run. Unlike a dtype, a converter is "
        "one item of a list, and it has no value that works on an older GPU."
    )
    why = (
        "fp8 matrix multiplies need compute capability 8.9 [S6][S20]: torchtitan's float8 converter raises "
        "`float8 is only supported on SM89 or later` (torchtitan 0.2.2 components/quantization/float8.py:37-44), "
        "and its MXFP8 converter asserts SM100 (mx.py:42-44)."
    )
    fix_safety = (
        "No automatic fix: removing the converter trains the same model in the run's own dtype (the message says "
        "so); torchtitan's `emulate` switch is for tests only and is not offered."
    )
    names = ("converters",)
    sources = ("S6", "S20")
    kinds = KINDS
    precedence = 1

    bad = DataExamples("bad")
    good = DataExamples("good")

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.fp8

    def check_config(self, view, ctx) -> None:
        check(view, ctx, KINDS)
