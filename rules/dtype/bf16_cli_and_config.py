from __future__ import annotations

from rlcompat.analysis import confighelpers as h
from rlcompat.knowledge.precision import dtype_for
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good
from rlcompat.analysis.confighelpers import sglang_server, turn_off
from rlcompat.analysis.knowledge_keys import negated_switch
from rlcompat.knowledge.capabilities import runs

# Generic (non-verl) keys: transformers/TRL `bf16`, `torch_dtype`, accelerate's `mixed_precision`.
DTYPE_NAMES = ("torch_dtype", "model_dtype")
DTYPE_FLAGS = ("--dtype", "--torch_dtype", "--torch-dtype")
MIXED_FLAGS = ("--mixed_precision", "--mixed-precision")


_POST_INIT = """import os


class TrainingArguments:
    def __post_init__(self):
        self.mixed_precision = os.environ.get("ACCELERATE_MIXED_PRECISION", "no")
        {body}
"""


class Bf16CliAndConfig(ConfigRule):
    code = "RLC107"
    name = "bf16-cli-and-config"
    title = "bf16 chosen by a CLI flag or a trainer config key on a GPU without bf16"
    what = (
        "Finds argparse-style flags in launch scripts (`--bf16`, `--bf16 True`, `--dtype bfloat16`, `--torch_dtype "
        "bfloat16`, `--mixed_precision bf16`: transformers/TRL, OpenRLHF, accelerate, vLLM) and the same keys in YAML "
        "trainer configs (`bf16: true`, `torch_dtype: bfloat16`, `mixed_precision: bf16`). In Python, a dtype or "
        "`mixed_precision` set under an `if` that tests a bf16 switch (`elif self.bf16: self.mixed_precision = "
        "\"bf16\"`) follows that switch and is not reported: the switch is where bf16 is chosen."
    )
    why = (
        "They switch training or inference to bf16, which compute capability < 8.0 has no hardware for [S1]; vLLM "
        "refuses it [S6] and transformers no longer stops it early since torch reports emulated support [S3]."
    )
    fix_safety = (
        "`--bf16` is removed and `bf16: true` becomes false (fp32 training): safe. Where the command's framework "
        "turns bf16 on by default and off with a flag of its own (oat's tyro `--no-bf16`), removing `--bf16` would "
        "leave it on: RLC118 reports that flag and writes the off flag instead. A dtype value follows the precision "
        "policy (docs/precision.md): a model's training dtype (`--torch_dtype`, `torch_dtype:`) becomes `float32`, safe; "
        "an inference engine's (`vllm serve --dtype`) becomes `float16` on sm70/sm75, unsafe (a smaller range: "
        "bf16-pretrained models can overflow [S66]), `float32` on sm5x/sm6x (an SGLang server's `--dtype` is left alone "
        "where SGLang runs: it serves in float16 below 8.0 whatever the flag says [S410]); `mixed_precision` becomes `no` (safe) or "
        "`fp16` on sm70/sm75 (unsafe, autocast under a loss scaler)."
    )
    names = ("bf16", "bfloat16")
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    sources = ("S1", "S3", "S6", "S66", "S410")

    bad = (
        Bad("deepspeed --module openrlhf.cli.train_ppo_ray \\\n   --bf16 \\\n   --zero_stage 2\n",
            fixed="deepspeed --module openrlhf.cli.train_ppo_ray \\\n   --zero_stage 2\n", path="run.sh"),
        Bad("accelerate launch train.py --bf16 True --output_dir out\n",
            fixed="accelerate launch train.py --bf16 False --output_dir out\n", path="run.sh"),
        Bad("vllm serve Qwen/Qwen2.5-7B --dtype bfloat16\n", target="sm75", unsafe=True,
            fixed="vllm serve Qwen/Qwen2.5-7B --dtype float16\n", path="run.sh"),
        Bad("python train.py --torch_dtype bfloat16 --fp16\n", target="sm70",
            fixed="python train.py --torch_dtype float32 --fp16\n", path="run.sh"),
        Bad("accelerate launch --mixed_precision=bf16 train.py\n",
            fixed="accelerate launch --mixed_precision=no train.py\n", path="run.sh"),
        Bad("learning_rate: 1.0e-6\nbf16: true\n", fixed="learning_rate: 1.0e-6\nbf16: false\n", path="grpo.yaml"),
        Bad("compute_environment: LOCAL_MACHINE\nmixed_precision: bf16\n",
            fixed="compute_environment: LOCAL_MACHINE\nmixed_precision: 'no'\n", path="accelerate.yaml"),
    )
    good = (
        Good("accelerate launch train.py --bf16 False\n", path="run.sh"),
        Good("vllm serve m --dtype bfloat16\n", path="run.sh", target="sm80"),
        # SGLang serves in float16 below 8.0 whatever --dtype says [S410]
        Good("python -m sglang.launch_server --model-path m --dtype bfloat16\n", path="serve.sh", target="sm75"),
        Good("bf16: false\n", path="grpo.yaml"),
        Good("echo --bf16\n", path="run.sh", target="sm86"),
        # transformers' TrainingArguments (training_args.py, 5.10.4): the value follows the `bf16` switch, which is
        # where bf16 is chosen (reported there: `--bf16`, `bf16: true`, `bf16=True`); this line only passes it on.
        # Python that picks "bf16" on its own is RLC102's (tests/test_switch_followers.py).
        Good(_POST_INIT.format(body='if self.fp16:\n            self.mixed_precision = "fp16"\n'
                                    '        elif self.bf16:\n            self.mixed_precision = "bf16"'),
             path="training_args.py"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.bf16_native

    def check_config(self, view, ctx) -> None:
        target = ctx.target
        fp16 = dtype_for(target, "autocast") == "float16"
        # a bare `--bf16` of a framework that turns bf16 on by default (oat's tyro flags) is RLC118's: its fix is the
        # framework's off flag, since removing this one leaves bf16 on
        flags = [s for s in view.flags("--bf16") if negated_switch(view, ctx, s) is None]
        turn_off(flags + ([] if view.is_verl and view.kind == "yaml" else view.by_name("bf16")), ctx,
                 lambda s: f"--bf16 trains in bf16, which {target.name} ({target.architecture}) lacks; drop the flag"
                           + (" (or use --fp16)" if fp16 else ""),
                 lambda s: f"{s.label} is {s.value}{h.where(s)}: bf16 training on {target.name} "
                           f"({target.architecture}), which lacks bf16; set it to false",
                 removal=lambda s: "remove --bf16")
        dtype_settings = view.flags(*DTYPE_FLAGS) + (view.by_name(*DTYPE_NAMES) if not view.is_verl else [])
        # SGLang's model runner sets the server's dtype to float16 on any card below 8.0 whatever `--dtype` says
        # [S410]: on a card it runs on, its `--dtype bfloat16` selects nothing (RLC417 reports the cards it refuses)
        sglang_forces = sglang_server(view.command_words) and runs("sglang", target) if view.kind == "command" else False
        for s in dtype_settings:
            if not h.is_bf16(s.value) or h.follows_bf16_switch(s):
                continue
            if sglang_forces and s.flag and s.key.lstrip("-") == "dtype":
                continue
            new, safety = h.dtype_replacement(target, s.value, _dtype_role(view, s))
            ctx.report(s.key_span, f"{s.label} is {s.value}{h.where(s)}: {target.name} ({target.architecture}) has no "
                                   f"bf16; use {new}", [s.rewrite(new)], safety, f"use {new}")
        mixed = view.flags(*MIXED_FLAGS) + (view.by_name("mixed_precision") if not view.is_verl else [])
        for s in mixed:
            if s.value is None or s.value.strip().lower() != "bf16" or h.follows_bf16_switch(s):
                continue
            new = "fp16" if fp16 else "no"
            # YAML reads a bare `no` as false: quote it where the value is unquoted YAML.
            text = new
            if view.kind == "yaml" and new == "no" and s.value_span is not None:
                quoted = ctx.source_text[s.value_span.start - 1: s.value_span.start] in "'\""
                text = new if quoted and s.value_span.start > 0 else "'no'"
            ctx.report(s.key_span, f"{s.label} is bf16{h.where(s)}: {target.name} ({target.architecture}) has no bf16; "
                                   f"use {new}", [s.rewrite(text)], FixSafety.UNSAFE if fp16 else FixSafety.SAFE,
                       f"use {new}")


_ENGINES = ("vllm", "sglang")


def _dtype_role(view, setting) -> str:
    """An inference engine's `--dtype` is a rollout dtype; a trainer's `--dtype`/`torch_dtype` holds training weights."""
    if setting.flag and setting.key.lstrip("-") == "dtype" and any(
            e in w for w in view.command_words for e in _ENGINES):
        return "rollout"
    return "weights"
