"""Values a framework's own code gives a key (lang/pysettings.py `python-default` / `python-forced`): TRL's
`self.bf16 = not (self.fp16) if self.bf16 is None else self.bf16` (trl 0.24.0 trl/trainer/grpo_config.py:640) and
OpenRLHF's `if args.packing_samples and not args.flash_attn: args.flash_attn = True` (openrlhf 0.5.9
cli/train_sft.py:251-253). Reported where written, never fixed there; DeepSpeed "auto" follows the trainer flag."""

from __future__ import annotations

from rlcompat.api import scan_source
from rlcompat.lang import pysettings
from rlcompat.knowledge.targets import resolve_target

TRL = """from dataclasses import dataclass, field
from typing import Optional

from transformers import TrainingArguments


@dataclass
class GRPOConfig(TrainingArguments):
    bf16: Optional[bool] = field(default=None, metadata={"help": "bf16"})

    def __post_init__(self):
        self.bf16 = not (self.fp16) if self.bf16 is None else self.bf16
        super().__post_init__()
"""

OPENRLHF = """import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--flash_attn", action="store_true", default=False, help="Enable FlashAttention2")
parser.add_argument("--packing_samples", action="store_true", default=False)
args = parser.parse_args()
if args.packing_samples and not args.flash_attn:
    print("[Warning] Please --flash_attn to accelerate when --packing_samples is enabled.")
    args.flash_attn = True
"""


def _settings(text: str, *triggers: str):
    return pysettings.settings_of(text, triggers or ("bf16", "flash_attn"))


def _scan(text: str, target: str, path: str = "config.py"):
    return scan_source(text, resolve_target(target), path, "python")


def test_an_unset_default_resolved_from_an_inherited_field_keeps_the_expression():
    (s,) = [s for s in _settings(TRL) if s.origin == "python-default"]
    assert (s.key, s.value, s.value_span, s.unset) == ("bf16", None, None, "not fp16")
    assert TRL[s.key_span.start:s.key_span.end] == "bf16" and "self.bf16 is None" in s.via


def test_an_unset_default_from_the_class_own_fields_is_evaluated():
    text = ("class C:\n    fp16: bool = False\n    bf16: Optional[bool] = None\n\n    def __post_init__(self):\n"
            "        if self.bf16 is None:\n            self.bf16 = not self.fp16\n")
    (s,) = [s for s in _settings(text) if s.origin == "python-default"]
    assert (s.value, s.unset) == ("True", "")
    flipped = text.replace("fp16: bool = False", "fp16: bool = True")
    assert [s.value for s in _settings(flipped) if s.origin == "python-default"] == ["False"]


def test_a_value_forced_under_another_setting_is_a_flag_setting_of_its_own():
    forced = [s for s in _settings(OPENRLHF) if s.origin == "python-forced"]
    assert [(s.key, s.value, s.flag, s.value_span) for s in forced] == [("flash_attn", "True", True, None)]
    assert "args.packing_samples" in forced[0].via


def test_repeating_a_choice_made_elsewhere_is_still_not_a_setting():
    text = "if args.bf16:\n    args.bf16 = True\nif cfg.bf16 is None and cfg.bf16:\n    cfg.bf16 = True\n"
    assert _settings(text) == []


def test_trl_default_is_reported_where_written_with_the_caller_fix_of_the_precision_policy():
    (p40,) = [f for f in _scan(TRL, "sm61", "trl/trainer/grpo_config.py") if f.code == "RLC118"]
    assert p40.location.line == 12 and p40.fix is None
    assert "defaults to true when unset" in p40.message and "pass bf16=False where the config is built" in p40.message
    assert "fp16=True" not in p40.message  # never offered below sm70
    (t4,) = [f for f in _scan(TRL, "sm75", "trl/trainer/grpo_config.py") if f.code == "RLC118"]
    assert "bf16=False, fp16=True" in t4.message and "unsafe" in t4.message and t4.fix is None
    assert not [f for f in _scan(TRL, "sm80", "trl/trainer/grpo_config.py") if f.code == "RLC118"]


def test_a_default_resolved_from_something_else_is_not_claimed_by_trl_knowledge():
    swift = ("class Args:\n    bf16: Optional[bool] = None\n\n    def _init_mixed_precision(self):\n"
             "        bf16 = self.torch_dtype == torch.bfloat16\n        if self.bf16 is None:\n            self.bf16 = bf16\n")
    assert not [f for f in _scan(swift, "sm61") if f.code in ("RLC118", "RLC003")]


def test_openrlhf_forced_flash_attn_is_reported_without_a_fix():
    found = [f for f in _scan(OPENRLHF, "sm61", "openrlhf/cli/train_sft.py") if f.location.line == 9]
    assert [f.code for f in found] == ["RLC207"] and found[0].fix is None
    assert "when `args.packing_samples and (not args.flash_attn)`" in found[0].message
    assert not [f for f in _scan(OPENRLHF, "sm80", "openrlhf/cli/train_sft.py") if f.location.line == 9]


def test_deepspeed_auto_is_left_to_the_trainer_flag():
    text = '{\n  "bf16": {"enabled": "auto"},\n  "fp16": {"enabled": "auto"}\n}\n'
    assert not scan_source(text, resolve_target("sm61"), "ds_config.json", "json")
    on = text.replace('"bf16": {"enabled": "auto"}', '"bf16": {"enabled": true}')
    assert [f.code for f in scan_source(on, resolve_target("sm61"), "ds_config.json", "json")] == ["RLC118"]


# OpenRLHF 0.11.2 (openrlhf/cli/train_ppo_ray.py:686-704): dotted flag groups, a FlashAttention value forced under
# a test that reads the key only to see it lacks "flash_attention", nested in `if packing`, and packing itself turned
# on by the code for ring attention. The `--ds.attn_implementation` declaration holds no trigger word.
OPENRLHF_0112 = """import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--ds.attn_implementation", type=str, default="sdpa")
parser.add_argument("--ds.packing_samples", action="store_true", default=False)
parser.add_argument("--ds.ring_attn_size", type=int, default=1)
parser.add_argument("--vllm.num_engines", type=int, default=None)
parser.add_argument("--vllm.enforce_eager", action="store_true", default=False)

if __name__ == "__main__":
    args = parser.parse_args()
    if args.ds.ring_attn_size > 1:
        if not args.ds.packing_samples:
            args.ds.packing_samples = True
    if args.ds.packing_samples:
        if "flash_attention" not in args.ds.attn_implementation:
            args.ds.attn_implementation = "flash_attention_2"
"""


def test_a_value_forced_where_the_test_sees_it_lacks_a_word_under_an_enclosing_if():
    forced = {s.key: s for s in _settings(OPENRLHF_0112, "packing", "flash_attention") if s.origin == "python-forced"}
    assert set(forced) == {"ds.packing_samples", "ds.attn_implementation"}  # dotted dests, read as flags
    attention = forced["ds.attn_implementation"]
    assert (attention.value, attention.flag, attention.value_span) == ("flash_attention_2", True, None)
    # The enclosing `if` is part of the condition; `__name__ == "__main__"` is no condition.
    assert "when `args.ds.packing_samples and 'flash_attention' not in args.ds.attn_implementation` (line 16)" \
        in attention.via
    # Without an enclosing test or another name in its own test, a value set when unset is a default, not forced.
    alone = 'if "flash_attention" not in args.attn:\n    args.attn = "flash_attention_2"\n'
    assert [s.origin for s in _settings(alone, "flash_attention")] == ["python-default"]


def test_packing_the_code_turns_on_is_reported_once_where_flash_attention_is_forced():
    found = [f for f in _scan(OPENRLHF_0112, "sm61", "openrlhf/cli/train_ppo_ray.py") if f.code.startswith("RLC2")]
    assert [(f.code, f.location.line) for f in found] == [("RLC207", 17)] and found[0].fix is None
    assert "OpenRLHF 0.11.2 knowledge" in found[0].message
    # Where the same code forces no attention value, packing turned on is the finding.
    packing_only = OPENRLHF_0112.split("    if args.ds.packing_samples:")[0]
    found = [f for f in _scan(packing_only, "sm61", "openrlhf/cli/train_ppo_ray.py") if f.code.startswith("RLC2")]
    assert [(f.code, f.location.line) for f in found] == [("RLC207", 14)]
    assert not [f for f in _scan(OPENRLHF_0112, "sm80", "openrlhf/cli/train_ppo_ray.py") if f.code == "RLC207"]


def test_an_argparse_default_that_matters_only_with_a_flag_the_parser_leaves_off():
    eager = [f for f in _scan(OPENRLHF_0112, "sm61", "openrlhf/cli/train_ppo_ray.py") if f.code == "RLC404"]
    assert not eager  # --vllm.enforce_eager's default matters only with --vllm.num_engines, None here
    engines_on = OPENRLHF_0112.replace('"--vllm.num_engines", type=int, default=None', '"--vllm.num_engines", type=int, default=2')
    lines = {f.location.line for f in _scan(engines_on, "sm61", "openrlhf/cli/train_ppo_ray.py") if f.code == "RLC404"}
    assert {7, 8} <= lines  # vLLM engines on sm61, and its eager mode off
