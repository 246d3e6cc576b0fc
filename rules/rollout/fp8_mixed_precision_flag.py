from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good
from rlcompat.knowledge.precision import dtype_for

MIXED_FLAGS = ("--mixed_precision", "--mixed-precision")
# accelerate's `mixed_precision` values for the dtypes the precision policy (rlcompat/knowledge/data/precision.toml) picks
_ACCELERATE_VALUE = {"bfloat16": "bf16", "float16": "fp16", "float32": "no"}


class Fp8MixedPrecisionFlag(ConfigRule):
    code = "RLC409"
    name = "fp8-mixed-precision-flag"
    title = "`--mixed_precision fp8` / `mixed_precision: fp8` (accelerate) on a GPU below 8.9"
    what = (
        "Finds `--mixed_precision fp8` (`accelerate launch`, and training scripts that pass the flag on to "
        "`Accelerator`) in launch scripts, and `mixed_precision: fp8` in accelerate config files, on targets whose "
        "`fp8` fact is false (below 8.9). The same choice in Python (`Accelerator(mixed_precision=\"fp8\")`) and "
        "TransformerEngine's `fp8_autocast` are RLC408."
    )
    why = (
        "accelerate's fp8 runs the matmuls through TransformerEngine (or torchao/MS-AMP), which needs Ada or Hopper: "
        "TransformerEngine asserts `Device compute capability 8.9 or higher required for FP8 execution.` [S69]; "
        "Triton's fp8e4nv type needs 8.9 too [S20]. verl's FSDP `mixed_precision` block is a different key and is "
        "not read here."
    )
    fix_safety = (
        "The value becomes the mixed-precision dtype of the precision policy (docs/precision.md): `bf16` on sm80/"
        "sm86 (safe), `no` (fp32) below 7.0 (safe), `fp16` on sm70/sm75 (unsafe: fp16's smaller range can "
        "overflow a bf16-pretrained model)."
    )
    names = ("fp8",)
    sources = ("S20", "S69")
    prevents = ("X11",)
    languages = frozenset({"shell", "yaml", "markdown"})

    bad = (
        Bad("accelerate launch --mixed_precision fp8 --num_processes 2 train.py\n", path="run.sh", target="sm86",
            fixed="accelerate launch --mixed_precision bf16 --num_processes 2 train.py\n"),
        Bad("accelerate launch --mixed_precision=fp8 train.py\n", path="run.sh", target="sm75", unsafe=True,
            fixed="accelerate launch --mixed_precision=fp16 train.py\n"),
        Bad("compute_environment: LOCAL_MACHINE\nmixed_precision: fp8\nnum_processes: 2\n", path="accelerate.yaml",
            target="sm61", fixed="compute_environment: LOCAL_MACHINE\nmixed_precision: 'no'\nnum_processes: 2\n"),
        Bad("mixed_precision: fp8\nfp8_config:\n  backend: TE\n", path="accelerate.yaml", target="sm80",
            fixed="mixed_precision: bf16\nfp8_config:\n  backend: TE\n"),
    )
    good = (
        Good("accelerate launch --mixed_precision fp8 train.py\n", path="run.sh", target="sm89"),
        Good("accelerate launch --mixed_precision bf16 train.py\n", path="run.sh", target="sm86"),
        Good("mixed_precision: fp8\n", path="accelerate.yaml", target="sm90"),
        Good("kv_cache_dtype: fp8\nmixed_precision: bf16\n", path="accelerate.yaml", target="sm86"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.fp8

    def check_config(self, view, ctx) -> None:
        target = ctx.target
        dtype = dtype_for(target, "autocast")
        value = _ACCELERATE_VALUE[dtype]
        safety = FixSafety.UNSAFE if dtype == "float16" else FixSafety.SAFE
        found = view.flags(*MIXED_FLAGS) + (view.by_name("mixed_precision") if not view.is_verl else [])
        for s in found:
            if s.value is None or s.value.strip().strip("'\"").lower() != "fp8":
                continue
            text = value
            if value == "no" and view.kind == "yaml" and s.value_span is not None:  # YAML reads a bare `no` as false
                quoted = s.value_span.start > 0 and ctx.source_text[s.value_span.start - 1] in "'\""
                text = "no" if quoted else "'no'"
            ctx.report(s.key_span, f"{s.key} is fp8{h.where(s)}: fp8 matmuls need compute capability 8.9+ "
                                   f"({target.name} is {target.capability_text}; TransformerEngine: `Device compute "
                                   f"capability 8.9 or higher required for FP8 execution.`); use {value}",
                       [s.rewrite(text)], safety, f"use {value}")
