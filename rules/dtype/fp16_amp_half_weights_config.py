from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good
from rlcompat.knowledge.spellings import half_to_fp32

WEIGHT_FLAGS = ("--torch_dtype", "--torch-dtype")
WEIGHT_KEYS = ("torch_dtype", "model_dtype")
MIXED_FLAGS = ("--mixed_precision", "--mixed-precision")


class Fp16AmpHalfWeightsConfig(ConfigRule):
    code = "RLC116"
    name = "fp16-amp-half-weights-config"
    title = "fp16 AMP and fp16/bf16 model weights chosen together in one config or one command"
    what = (
        "Finds, within one YAML trainer config or one launch command, an fp16 mixed-precision switch (`fp16: true`, "
        "`--fp16`, `--fp16 True`, `mixed_precision: fp16`, `--mixed_precision fp16`) together with model weights "
        "chosen in half precision (`torch_dtype: float16 | bfloat16`, `--torch_dtype float16`). The Python form is "
        "RLC108."
    )
    why = (
        "fp16 AMP keeps fp32 master weights; with fp16 parameters the grad scaler raises `ValueError: Attempting to "
        "unscale FP16 gradients.` [S60]. bf16 weights under fp16 autocast mix two half formats, and a bf16-pretrained "
        "model can overflow in fp16 [S66]."
    )
    fix_safety = (
        "The weights dtype becomes `float32` (`fp32` for `fp16`/`bf16` spellings): safe on every target, what fp16 "
        "AMP expects (docs/precision.md)."
    )
    names = ("fp16",)
    sources = ("S60", "S66")

    bad = (
        Bad("python train_sft.py --model_name_or_path m --torch_dtype float16 --fp16 True\n", target="sm75", path="run.sh",
            fixed="python train_sft.py --model_name_or_path m --torch_dtype float32 --fp16 True\n"),
        Bad("model_name_or_path: m\ntorch_dtype: bfloat16\nfp16: true\n", target="sm70", path="sft.yaml",
            fixed="model_name_or_path: m\ntorch_dtype: float32\nfp16: true\n"),
        Bad("accelerate launch --mixed_precision fp16 train.py --torch_dtype=half\n", target="sm86", path="run.sh",
            fixed="accelerate launch --mixed_precision fp16 train.py --torch_dtype=float32\n"),
    )
    good = (
        Good("python train_sft.py --torch_dtype float32 --fp16 True\n", target="sm75", path="run.sh"),
        Good("python train_sft.py --torch_dtype float16\n", target="sm75", path="run.sh"),
        Good("torch_dtype: float16\nfp16: false\n", target="sm75", path="sft.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True  # the grad scaler refuses fp16 gradients on every GPU

    def check_config(self, view, ctx) -> None:
        generic = not view.is_verl
        switches = [s for s in view.flags("--fp16") + (view.by_name("fp16") if generic else [])
                    if (s.flag and s.value == "") or s.as_bool() is True]
        switches += [s for s in view.flags(*MIXED_FLAGS) + (view.by_name("mixed_precision") if generic else [])
                     if (s.value or "").strip().lower() == "fp16"]
        if not switches:
            return
        switch = switches[0]
        for s in view.flags(*WEIGHT_FLAGS) + (view.by_name(*WEIGHT_KEYS) if generic else []):
            value = (s.value or "").strip()
            new = half_to_fp32().get(value.lower())  # the fp32 counterpart in the same spelling family
            if new is None:
                continue
            ctx.report(s.key_span, f"{s.label} is {value}{h.where(s)} with fp16 AMP ({switch.key}): fp16 AMP needs fp32 "
                                   "master weights (the grad scaler raises `Attempting to unscale FP16 gradients.`); "
                                   f"use {new}", [s.rewrite(new)], FixSafety.SAFE, f"use {new}")
