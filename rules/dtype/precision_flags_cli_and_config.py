from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.analysis.confighelpers import remove_flag
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good

MIXED_FLAGS = ("--mixed_precision", "--mixed-precision")


class PrecisionFlagsCliAndConfig(ConfigRule):
    code = "RLC115"
    name = "precision-flags-cli-and-config"
    title = "`--tf32` below Ampere, or fp16 training below Volta, chosen by a CLI flag or a trainer config key"
    what = (
        "Finds, in launch scripts and YAML trainer configs (transformers/TRL `HfArgumentParser` flags, accelerate): "
        "`--tf32`, `--tf32 True`, `tf32: true` below compute capability 8.0; `--fp16`, `--fp16 True`, `fp16: true`, "
        "`--mixed_precision fp16`, `mixed_precision: fp16` below 7.0. The same settings in Python are RLC112 and "
        "RLC113."
    )
    why = (
        "transformers raises `--tf32 requires Ampere or a newer GPU arch` below 8.0 [S61]. DeepSpeed refuses fp16 "
        "below 7.0 (`Type fp16 is not supported on your device.`) [S62], and there fp16 has no tensor cores and runs at "
        "1/64 rate on sm61 [S8][S16]: the precision policy trains in fp32 (docs/precision.md)."
    )
    fix_safety = (
        "A bare flag is removed, a value becomes false, `mixed_precision` becomes `no`: fp32 math either way, safe."
    )
    names = ("tf32", "fp16")
    sources = ("S8", "S16", "S61", "S62")

    bad = (
        Bad("python train.py --output_dir o --tf32 True --fp16 True\n", target="sm75",
            fixed="python train.py --output_dir o --tf32 False --fp16 True\n", path="run.sh"),
        Bad("deepspeed train.py \\\n  --fp16 \\\n  --zero_stage 2\n",
            fixed="deepspeed train.py \\\n  --zero_stage 2\n", path="run.sh"),
        Bad("learning_rate: 1.0e-6\ntf32: true\nfp16: true\n", fixed="learning_rate: 1.0e-6\ntf32: false\nfp16: false\n",
            path="sft.yaml"),
        Bad("compute_environment: LOCAL_MACHINE\nmixed_precision: fp16\n", target="sm60",
            fixed="compute_environment: LOCAL_MACHINE\nmixed_precision: 'no'\n", path="accelerate.yaml"),
    )
    good = (
        Good("python train.py --tf32 True --bf16 True\n", target="sm80", path="run.sh"),
        Good("python train.py --fp16 True\n", target="sm70", path="run.sh"),
        Good("fp16: true\n", target="sm75", path="sft.yaml"),
        Good("tf32: false\n", path="sft.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.cc < 80

    def check_config(self, view, ctx) -> None:
        target = ctx.target
        switches = [("tf32", "transformers raises `--tf32 requires Ampere or a newer GPU arch`")]
        if target.cc < 70:
            switches.append(("fp16", "DeepSpeed refuses fp16 below 7.0 and fp16 has no tensor cores here; train in fp32"))
        for key, reason in switches:
            names = view.by_name(key) if not (view.is_verl and view.kind == "yaml") else []
            for s in view.flags(f"--{key}") + names:
                if s.flag and s.value == "" and s.word_span is not None:
                    ctx.report(s.key_span, f"--{key} on {target.name} ({target.architecture}): {reason}",
                               [remove_flag(ctx.source_text, s.word_span)], FixSafety.SAFE, f"remove --{key}")
                elif s.as_bool() is True:
                    ctx.report(s.key_span, f"{s.label} is {s.value}{h.where(s)} on {target.name} "
                                           f"({target.architecture}): {reason}",
                               [s.rewrite(False)], FixSafety.SAFE, "set it to false")
        if target.cc >= 70:
            return
        mixed = view.flags(*MIXED_FLAGS) + (view.by_name("mixed_precision") if not view.is_verl else [])
        for s in mixed:
            if s.value is None or s.value.strip().lower() != "fp16":
                continue
            text = "no"
            if view.kind == "yaml" and s.value_span is not None:  # YAML reads a bare `no` as false
                quoted = s.value_span.start > 0 and ctx.source_text[s.value_span.start - 1] in "'\""
                text = "no" if quoted else "'no'"
            ctx.report(s.key_span, f"{s.label} is fp16{h.where(s)} on {target.name} ({target.architecture}): DeepSpeed "
                                   "refuses fp16 below 7.0 and fp16 has no tensor cores here; use no (fp32)",
                       [s.rewrite(text)], FixSafety.SAFE, "use no")
