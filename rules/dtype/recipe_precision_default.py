from __future__ import annotations

from pathlib import Path

from rlcompat.analysis.confighelpers import dtype_replacement, is_bf16
from rlcompat.analysis.recipe_defaults import append_option, left_defaults
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good

_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "dataclass_defaults"
_CMD = "python src/recipe/train.py --learning_rate 1e-6{extra}\n"
# Fields that switch bf16 on when True, and fields whose string value names the training dtype.
BF16_SWITCHES = ("bf16", "use_bf16", "bf16_full_eval")
DTYPE_FIELDS = ("dtype", "torch_dtype", "model_dtype", "param_dtype", "compute_dtype", "mixed_precision", "precision")


class RecipePrecisionDefault(ConfigRule):
    code = "RLC122"
    name = "recipe-precision-default"
    title = "A recipe dataclass defaults to bf16 and the launch command leaves it"
    what = (
        "Finds a launch command (`python train.py ...`, `accelerate launch train.py ...`) whose entry point in the "
        "scanned tree parses its options with HfArgumentParser/TrlParser over the tree's own dataclasses, or merges "
        "`OmegaConf.from_cli()` into an `OmegaConf.structured(...)` one, where a field defaults to bf16 "
        "(`bf16: bool = True`, `dtype: str = \"bfloat16\"`) and the command (and the `--config` YAML it passes) does "
        "not set it. Reported at the command, citing the field's file:line."
    )
    why = (
        "The default selects bf16 for every run that does not set the field [S156][S157]. On compute capability < 8.0 "
        "there is no bf16 hardware [S1]; `is_bf16_supported()` says True there by emulation, so nothing stops the "
        "run [S3][S15]."
    )
    fix_safety = (
        "Adds the option only where the tree's dataclass proves it and its spelling: `--bf16 False` for a `bool` field "
        "(`string_to_bool` takes False) [S156], the precision policy's dtype for a `str` field or a `Literal` that "
        "lists it, `field=value` for an `OmegaConf.from_cli` merge [S157]. fp32 (sm5x/sm6x, and any bool switch "
        "turned off) is safe; fp16 on sm70/sm75 is unsafe (a smaller range than bf16 [S66]). The fixed command is "
        "parsed again with the schema before it is written (rlcompat/schema/loadcheck.py)."
    )
    names = (".py", "-m ")
    sources = ("S1", "S3", "S15", "S66", "S156", "S157")

    bad = (
        Bad(_CMD.format(extra=""), path=str(_FIXTURE / "train.sh"),
            fixed=_CMD.format(extra=" --torch_dtype float32 --bf16 False --precision fp32")),
    )
    good = (
        Good(_CMD.format(extra=" --bf16 False --torch_dtype float32 --precision fp32"), path=str(_FIXTURE / "train.sh")),
        Good(_CMD.format(extra=""), path=str(_FIXTURE / "train.sh"), target="sm80"),
        Good("python other.py --learning_rate 1e-6\n", path=str(_FIXTURE / "train.sh")),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        for left in left_defaults(view, ctx):
            if left.field in BF16_SWITCHES and left.value == "True":
                value, safety = "False" if left.spelling == "argparse" else "false", FixSafety.SAFE
                what = f"{left.owner}.{left.field} defaults to True ({left.where}): bf16 mixed precision"
            elif left.field in DTYPE_FIELDS and is_bf16(left.value):
                value, safety = dtype_replacement(ctx.target, left.value)
                what = f"{left.owner}.{left.field} defaults to {left.value} ({left.where})"
            else:
                continue
            edit = append_option(view, ctx.source_text, left, value) if left.accepts(value) else None
            spelled = left.option(value)
            message = (f"{what}, and this command does not set it: {ctx.target.name} (compute capability "
                       f"{ctx.target.capability_text}) has no bf16 hardware")
            message += f"; add {spelled}" if edit else f"; no fix: {left.why_no_fix(value)}"
            ctx.report(view.anchor, message, [edit] if edit else [], safety, f"add {spelled}")
