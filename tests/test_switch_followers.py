"""A value that follows a switch, and a switch set under a condition, are not selections or defaults: the false
positives issue 24 found in transformers' `training_args.py`, on the real file and on its constructs, with the
hazards RLC107/RLC102/RLC118 and RLC306 exist for still reported."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

# transformers 5.10.4 `TrainingArguments.__post_init__`, sections 5 and 6, as the constructs stand there.
POST_INIT = '''import os


class TrainingArguments:
    def __post_init__(self):
        self.mixed_precision = os.environ.get("ACCELERATE_MIXED_PRECISION", "no")
        if self.fp16:
            self.mixed_precision = "fp16"
        elif self.bf16:
            self.mixed_precision = "bf16"

        if (self.torch_compile_mode is not None or self.torch_compile_backend is not None) and not self.torch_compile:
            self.torch_compile = True
'''


def findings(tmp_path, name: str, text: str, target: str = "sm61") -> list[tuple[int, str]]:
    path = tmp_path / name
    path.write_text(text)
    report = scan_paths([str(path)], resolve_target(target))
    assert not report.errors, report.errors
    return sorted((f.location.line, f.code) for f in report.findings)


def line_of(text: str, needle: str) -> int:
    return text.splitlines().index(next(l for l in text.splitlines() if needle in l)) + 1


def test_the_post_init_constructs_are_not_reported(tmp_path):
    # RLC355 stays on the compile line: it says the code forces compile when a compile mode or backend is asked
    # for, without a fix. That is what the line does; it is not called a default.
    assert findings(tmp_path, "training_args.py", POST_INIT) == [(13, "RLC355")]


@pytest.mark.parametrize("body, code", [
    ('self.mixed_precision = "bf16"', "RLC102"),  # chosen outright
    ('if self.use_amp:\n            self.mixed_precision = "bf16"', "RLC102"),  # the test is no bf16 switch
    ('if x.dtype == torch.bfloat16:\n            self.mixed_precision = "bf16"', "RLC102"),  # a dtype, not a switch
    ("self.torch_compile = True", "RLC306"),  # every config gets it
])
def test_the_hazards_these_rules_exist_for_are_still_found(tmp_path, body, code):
    text = f"import torch\n\n\nclass TrainingArguments:\n    def __post_init__(self):\n        {body}\n"
    found = findings(tmp_path, "args.py", text)
    assert (text.count("\n") - 0, code) in [(line, c) for line, c in found], found


# axolotl 0.21.0: `bf16: auto` asks a probe that emulation answers yes on a P40 [S3], and `torch_compile: auto` turns
# compile on wherever torch is installed; the code decides these itself, so they stay reported.
AUTO = '''import os


def setup(cfg, data, env):
    if cfg.fp8:
        os.environ["ACCELERATE_MIXED_PRECISION"] = "fp8"
    elif (cfg.bf16 == "auto" and is_torch_bf16_gpu_available()) or cfg.bf16 is True:
        os.environ["ACCELERATE_MIXED_PRECISION"] = "bf16"
    if data.get("torch_compile") == "auto":
        if env.get("torch_version"):
            data["torch_compile"] = True
'''


def test_choices_the_code_makes_itself_stay_reported(tmp_path):
    found = findings(tmp_path, "trainer.py", AUTO)
    assert line_of(AUTO, '= "bf16"') in {line for line, _ in found}, found
    assert (line_of(AUTO, 'data["torch_compile"] = True'), "RLC306") in found, found


@pytest.mark.parametrize("name, text, code", [
    ("run.sh", "accelerate launch --mixed_precision=bf16 train.py\n", "RLC107"),
    ("run.sh", "python train.py --bf16 True\n", "RLC107"),
    ("cfg.py", "from dataclasses import dataclass\n\n\n@dataclass\nclass C:\n    use_torch_compile: bool = True\n",
     "RLC306"),
])
def test_switches_set_where_the_user_chooses_are_still_found(tmp_path, name, text, code):
    assert code in {c for _, c in findings(tmp_path, name, text)}


def _installed_training_args() -> Path | None:
    spec = importlib.util.find_spec("transformers")
    path = Path(spec.origin).parent / "training_args.py" if spec and spec.origin else None
    return path if path and path.is_file() else None


@pytest.mark.skipif(_installed_training_args() is None, reason="transformers not installed")
def test_the_installed_training_args_raises_neither_false_positive(tmp_path):
    source = _installed_training_args().read_text("utf-8")
    if 'elif self.bf16:\n            self.mixed_precision = "bf16"' not in source:
        pytest.skip("this transformers release does not have the construct")
    found = findings(tmp_path, "training_args.py", source)
    mixed = line_of(source, 'self.mixed_precision = "bf16"')
    compile_on = source.splitlines().index("            self.torch_compile = True") + 1
    assert not [c for line, c in found if line == mixed], found
    assert "RLC306" not in {c for line, c in found if line == compile_on}, found
