from __future__ import annotations

from pathlib import Path

from rlcompat.analysis.confighelpers import dtype_replacement, is_bf16
from rlcompat.analysis.recipe_defaults import append_option, left_defaults
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good

_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "dataclass_defaults"
_CMD = "python src/recipe/train.py --learning_rate 1e-6{extra}\n"
_ARGPARSE = Path(__file__).resolve().parents[2] / "fixtures" / "recipes" / "argparse_defaults"
_DS_CMD = "deepspeed --num_gpus 1 main.py --actor_zero_stage 2{extra}\n"
_PY_CMD = "python train.py --lr 1e-6{extra}\n"
# Fields that switch bf16 (fp16) on when True, and fields whose string value names the training dtype.
BF16_SWITCHES = ("bf16", "use_bf16", "bf16_full_eval")
FP16_SWITCHES = ("fp16", "use_fp16")
DTYPE_FIELDS = ("dtype", "torch_dtype", "model_dtype", "param_dtype", "compute_dtype", "mixed_precision", "precision")
# fp16 spellings of a dtype field, and the fp32 word of the same family (fp16 -> fp32, float16 -> float32)
FP16_VALUES = {"fp16": "fp32", "float16": "float32"}


class RecipePrecisionDefault(ConfigRule):
    code = "RLC122"
    name = "recipe-precision-default"
    title = "A recipe's entry point defaults to bf16 (fp16 below Volta) and the launch command leaves it"
    what = (
        "Finds a launch command (`python train.py ...`, `accelerate launch train.py ...`, `deepspeed main.py ...`) "
        "whose entry point in the scanned tree parses its options with HfArgumentParser/TrlParser over the tree's own "
        "dataclasses, merges `OmegaConf.from_cli()` into an `OmegaConf.structured(...)` one, or declares them with "
        "plain argparse, where a field or option defaults to bf16 (`bf16: bool = True`, `dtype: str = \"bfloat16\"`, "
        "`add_argument(\"--dtype\", default=\"bf16\")`) or, below compute capability 7.0, to fp16 (`fp16: bool = "
        "True`, `add_argument(\"--dtype\", default=\"fp16\")`), and the command (and the `--config` YAML it passes) "
        "does not set it. Reported at the command, citing the default's file:line. The entry script is looked up "
        "beside the launch script, in the folders above it up to the tree's root (a script under "
        "`training_scripts/` is run from the folder that holds `main.py`), and at the root."
    )
    why = (
        "The default selects bf16 for every run that does not set the field [S156][S157]. On compute capability < 8.0 "
        "there is no bf16 hardware [S1]; `is_bf16_supported()` says True there by emulation, so nothing stops the "
        "run [S3][S15]. An fp16 default on compute capability 6.x: fp16 arithmetic runs at 1/64 of fp32 there with no "
        "tensor cores [S8], and DeepSpeed refuses fp16 below 7.0 (`Type fp16 is not supported on your device.`) [S62]."
    )
    fix_safety = (
        "Adds the option only where the tree's dataclass proves it and its spelling: `--bf16 False` for a `bool` field "
        "(`string_to_bool` takes False) [S156], the precision policy's dtype for a `str` field or a `Literal` that "
        "lists it, `field=value` for an `OmegaConf.from_cli` merge [S157]. fp32 (sm5x/sm6x, and any bool switch "
        "turned off) is safe; fp16 on sm70/sm75 is unsafe (a smaller range than bf16 [S66]). The fixed command is "
        "parsed again with the schema before it is written (rlcompat/schema/loadcheck.py)."
    )
    names = (".py", "-m ")
    sources = ("S1", "S3", "S8", "S15", "S62", "S66", "S156", "S157")

    bad = (
        Bad(_CMD.format(extra=""), path=str(_FIXTURE / "train.sh"),
            fixed=_CMD.format(extra=" --torch_dtype float32 --bf16 False --precision fp32")),
        # DeepSpeed-Chat's shape: `--dtype` defaults to fp16 with choices fp16/bf16 only, so no option fixes it; the
        # launch script sits two folders below main.py, which it is run beside
        Bad(_DS_CMD.format(extra=""), path=str(_ARGPARSE / "training_scripts" / "single_gpu" / "run.sh"),
            target="sm61"),
        Bad(_PY_CMD.format(extra=""), path=str(_ARGPARSE / "run_train.sh"), target="sm61",
            fixed=_PY_CMD.format(extra=" --mixed-precision fp32 --param-dtype fp32")),
        Bad(_PY_CMD.format(extra=""), path=str(_ARGPARSE / "run_train.sh"), target="sm75",
            fixed=_PY_CMD.format(extra=" --param-dtype fp32")),
    )
    good = (
        Good(_CMD.format(extra=" --bf16 False --torch_dtype float32 --precision fp32"), path=str(_FIXTURE / "train.sh")),
        Good(_CMD.format(extra=""), path=str(_FIXTURE / "train.sh"), target="sm80"),
        Good("python other.py --learning_rate 1e-6\n", path=str(_FIXTURE / "train.sh")),
        Good(_DS_CMD.format(extra=""), path=str(_ARGPARSE / "training_scripts" / "single_gpu" / "run.sh"),
             target="sm75"),
        Good(_PY_CMD.format(extra=" --mixed-precision fp32 --param-dtype fp32"), path=str(_ARGPARSE / "run_train.sh"),
             target="sm61"),
        Good(_PY_CMD.format(extra=""), path=str(_ARGPARSE / "run_train.sh"), target="sm80"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        old = ctx.target.cc < 70  # fp16 at 1/64 of fp32 and refused by DeepSpeed [S8][S62]
        for left in left_defaults(view, ctx):
            reason = "has no bf16 hardware"
            if left.field in BF16_SWITCHES and left.value == "True":
                value, safety = "False" if left.spelling == "argparse" else "false", FixSafety.SAFE
                what = f"{left.label} defaults to True ({left.where}): bf16 mixed precision"
            elif left.field in DTYPE_FIELDS and is_bf16(left.value):
                value, safety = dtype_replacement(ctx.target, left.value)
                what = f"{left.label} defaults to {left.value} ({left.where})"
            elif old and (left.field in FP16_SWITCHES and left.value == "True"
                          or left.field in DTYPE_FIELDS and left.value.strip().lower() in FP16_VALUES):
                switch = left.field in FP16_SWITCHES
                value = ("False" if left.spelling == "argparse" else "false") if switch else FP16_VALUES[
                    left.value.strip().lower()]
                safety = FixSafety.SAFE
                what = f"{left.label} defaults to {left.value} ({left.where})"
                what += ": fp16 mixed precision" if switch else ""
                reason = "runs fp16 at 1/64 of fp32 with no tensor cores, and DeepSpeed refuses fp16 below 7.0"
            else:
                continue
            edit = append_option(view, ctx.source_text, left, value) if left.accepts(value) else None
            spelled = left.option(value)
            message = (f"{what}, and this command does not set it: {ctx.target.name} (compute capability "
                       f"{ctx.target.capability_text}) {reason}")
            message += f"; add {spelled}" if edit else f"; no fix: {left.why_no_fix(value)}"
            ctx.report(view.anchor, message, [edit] if edit else [], safety, f"add {spelled}")
