"""Issue 17's V100 script, fixed by `rlcompat fix --unsafe-fixes` for sm70 and sm75, trains a step.

The fixed script's settings are read back (weights dtype from `torch_dtype=`, autocast from `fp16=`/`bf16=`) and
applied the way the HF Trainer applies them (fp16=True: autocast to float16 under a GradScaler) to a tiny Qwen2 model
on CPU, under the sm70/sm75 target guard. The pair rlcompat used to write (fp16 weights + fp16=True) is shown to fail
against torch's own GradScaler.
"""

from __future__ import annotations

import ast

import pytest

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

SCRIPT = """import torch
from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B", torch_dtype=torch.bfloat16)
args = TrainingArguments(output_dir="out", bf16=True)
"""


def fixed_script(tmp_path, target: str) -> str:
    path = tmp_path / f"train_{target}.py"
    path.write_text(SCRIPT)
    report = fix_paths([str(path)], resolve_target(target), unsafe=True)
    assert not report.errors, report.errors
    return path.read_text()


def settings(text: str) -> tuple[str, dict[str, bool]]:
    """(torch_dtype attribute name, TrainingArguments boolean keywords) of the script."""
    dtype, flags = None, {}
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Attribute, ast.Name)):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        for kw in node.keywords:
            if name == "from_pretrained" and kw.arg == "torch_dtype":
                dtype = kw.value.attr
            elif name == "TrainingArguments" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool):
                flags[kw.arg] = kw.value.value
    return dtype, flags


@pytest.mark.parametrize("target", ["sm70", "sm75"])
def test_fix_writes_fp32_weights_and_fp16_autocast_and_leaves_no_precision_finding(tmp_path, target):
    text = fixed_script(tmp_path, target)
    assert settings(text) == ("float32", {"fp16": True})
    assert "bfloat16" not in text and "bf16" not in text
    remaining = [f.code for f in scan_paths([str(tmp_path)], resolve_target(target)).findings]
    assert not [c for c in remaining if c.startswith("RLC1")], remaining


@pytest.mark.parametrize("target", ["sm61", "sm60"])
def test_pascal_fix_trains_in_fp32_and_never_offers_fp16(tmp_path, target):
    text = fixed_script(tmp_path, target)
    assert settings(text) == ("float32", {"bf16": False})
    assert "fp16" not in text and "float16" not in text


torch = pytest.importorskip("torch")


def train_one_step(folder, weights_dtype, fp16_autocast: bool, target: str):
    from transformers import AutoModelForCausalLM

    from rlcompat.verify.guard import TargetGuard

    torch.manual_seed(0)
    with TargetGuard(resolve_target(target), None, enforce=True, device="cpu") as guard:
        model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=weights_dtype)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler("cpu", enabled=fp16_autocast)
        ids = torch.randint(0, model.config.vocab_size, (2, 16))
        with torch.autocast("cpu", dtype=torch.float16, enabled=fp16_autocast):
            loss = model(input_ids=ids, labels=ids).loss
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return loss, model, guard


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory):
    pytest.importorskip("transformers")
    from rlcompat.verify.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_qwen2"))


@pytest.mark.parametrize("target", ["sm70", "sm75"])
def test_fixed_script_trains_a_step_under_the_target_guard(tmp_path, tiny_qwen, target):
    dtype_name, flags = settings(fixed_script(tmp_path, target))
    loss, model, guard = train_one_step(tiny_qwen, getattr(torch, dtype_name), flags["fp16"], target)
    assert torch.isfinite(loss) and guard.violations == []
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert guard.precision.autocast == {"cpu float16"} and guard.precision.scaler == "GradScaler"
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_the_pair_rlcompat_used_to_write_crashes_against_the_grad_scaler(tiny_qwen):
    # torch_dtype=torch.float16 with fp16=True: outside the guard torch's own scaler refuses the fp16 gradients.
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_qwen, torch_dtype=torch.float16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    ids = torch.randint(0, model.config.vocab_size, (2, 16))
    with torch.autocast("cpu", dtype=torch.float16):
        loss = model(input_ids=ids, labels=ids).loss
    scaler.scale(loss).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.step(opt)
