"""`rlcompat verify` as a user runs it: bad input, the pristine verl tree on a P40, and a fixed copy."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from rlcompat.release import install_command
from rlcompat.verify.runner import VerifyUsageError, resolve_package


def _installed_verl() -> Path | None:
    if importlib.util.find_spec("torch") is None:
        return None
    spec = importlib.util.find_spec("verl")  # finds the package without importing it
    return Path(spec.origin).parent if spec and spec.origin else None


VERL = _installed_verl()
needs_verl = pytest.mark.skipif(VERL is None, reason="torch/verl not importable (pip install 'rlcompat[verify]')")


def _skip_if_environment_cannot_run(code: int, reason: str) -> None:
    """verl installed but its training code not importable here (e.g. uvicorn missing): skip, do not fail."""
    if code == 2 and ("cannot import verl" in reason or "torch is not importable" in reason):
        pytest.skip(reason)


def test_path_may_be_the_package_or_its_parent(tmp_path):
    pkg = tmp_path / "src" / "verl"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    assert resolve_package(pkg) == pkg.resolve()
    assert resolve_package(tmp_path / "src") == pkg.resolve()


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "no such directory"),
    (lambda p: p, "no verl package here"),
    (lambda p: (p / "other").mkdir() or (p / "other" / "__init__.py").write_text("") or p / "other", "not 'verl'"),
])
def test_bad_paths_are_refused_with_a_reason(tmp_path, make, message):
    with pytest.raises(VerifyUsageError, match=message):
        resolve_package(make(tmp_path))


def test_cli_bad_path_exits_2_naming_it(run_cli, tmp_path):
    code, out, err = run_cli("verify", str(tmp_path / "nowhere"), "--target", "sm61")
    assert code == 2 and out == ""
    assert f"{tmp_path / 'nowhere'}: no such directory" in err


def test_cli_unknown_target_exits_2(run_cli, tmp_path):
    (tmp_path / "verl").mkdir()
    (tmp_path / "verl" / "__init__.py").write_text("")
    code, _, err = run_cli("verify", str(tmp_path), "--target", "sm999")
    assert code == 2 and "unknown target" in err


def test_verl_that_cannot_import_exits_2_with_the_reason(run_cli, tmp_path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not importable")
    (tmp_path / "verl").mkdir()
    (tmp_path / "verl" / "__init__.py").write_text("import verl_missing_dependency\n")
    code, out, _ = run_cli("verify", str(tmp_path), "--target", "sm61", "--device", "cpu", "--output-format", "json")
    result = json.loads(out)
    assert code == 2 and result["status"] == "error"
    assert "cannot import verl" in result["reason"] and "verl_missing_dependency" in result["reason"]


@pytest.mark.slow
@needs_verl
def test_pristine_verl_fails_on_a_p40_naming_the_first_violation(run_cli):
    code, out, _ = run_cli("verify", str(VERL), "--target", "sm61", "--device", "cpu")
    _skip_if_environment_cannot_run(code, out)
    assert code == 1, out
    assert "rlcompat verify: FAIL" in out
    assert "attn_implementation='flash_attention_2'" in out
    # The first frame inside the tree, so the user can jump to it: verl's FSDP engine building the model.
    assert re.search(r"at .*verl/workers/engine/fsdp/transformer_impl\.py:\d+ in _build_module", out)


@pytest.mark.slow  # about a minute on a busy 2-core machine, most of it importing torch and verl twice
@needs_verl
def test_fixed_copy_trains_one_ppo_step_on_cpu(run_cli, tmp_path):
    copy = tmp_path / "verl"
    shutil.copytree(VERL, copy, ignore=shutil.ignore_patterns("__pycache__"))
    # The files verify pointed at, fixed by rlcompat itself.
    # The files verify pointed at, including verl's `use_torch_compile: bool = True` defaults (RLC306). The
    # defaults nothing reads (ActorConfig.use_torch_compile, EngineConfig.dtype) stay as they are: RLC356 reports
    # them without a fix, and the run below proves that leaving them changes nothing.
    touched = ["workers/config/model.py", "workers/config/engine.py", "workers/config/actor.py", "utils/model.py",
               "workers/engine/fsdp/transformer_impl.py"]
    code, _, err = run_cli("fix", *[str(copy / f) for f in touched], "--target", "sm61", "--unsafe-fixes",
                           "--ignore", "RLC356")
    assert code == 0, err
    assert "    use_torch_compile: bool = True" in (copy / "workers/config/actor.py").read_text()
    assert "use_torch_compile: bool = True" not in (copy / "workers/config/engine.py").read_text()

    sources = {p: p.read_bytes() for p in copy.rglob("*.py")}
    code, out, _ = run_cli("verify", str(copy), "--target", "sm61", "--device", "cpu", "--output-format", "json")
    result = json.loads(out)
    _skip_if_environment_cannot_run(code, result.get("reason") or "")
    assert code == 0, result.get("reason")
    assert result["status"] == "pass" and result["violations"] == []
    assert result["verl"]["path"] == str(copy.resolve())
    assert "bfloat16" not in result["dtypes_seen"]
    checks = {c["name"]: c["ok"] for c in result["checks"]}
    assert all(checks.values()) and "actor weights changed" in checks and "critic weights changed" in checks
    assert result["metrics"]["logprob_max_abs_diff"] <= 1e-4
    assert result["metrics"]["rewards"] == [1.0, 0.0, 1.0, 0.0]
    assert {p: p.read_bytes() for p in copy.rglob("*.py")} == sources  # the tree under test is left as it was


def test_a_child_that_hangs_is_stopped_and_reported(run_cli, tmp_path):
    (tmp_path / "verl").mkdir()
    (tmp_path / "verl" / "__init__.py").write_text("import time\ntime.sleep(60)\n")
    code, out, _ = run_cli("verify", str(tmp_path), "--target", "sm61", "--device", "cpu", "--timeout", "3",
                           "--output-format", "json")
    result = json.loads(out)
    assert code == 2 and result["status"] == "error"
    assert "timed out after 3 s" in result["reason"]


# --- what a user without torch, or with progress bars, sees --------------------------------------------------


def test_without_torch_verify_says_in_one_line_what_to_install(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from rlcompat.cli.app import app

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None if name == "torch" else real(name, *a, **k))
    (tmp_path / "verl").mkdir()
    (tmp_path / "verl" / "__init__.py").write_text("")
    result = CliRunner().invoke(app, ["verify", str(tmp_path), "--target", "sm61"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"rlcompat: error: verify needs torch, not installed in this Python: {install_command('verify')}"]


# Loaded by the child only (its command line names the harness): the installed packages, torch among them, are
# gone there, as in a Python without rlcompat[verify]; the parent still finds them.
_NO_TORCH_IN_THE_CHILD = """import sys

if "rlcompat.verify.harness" in sys.orig_argv:
    sys.path[:] = [p for p in sys.path if "site-packages" not in p]
"""


def test_a_torch_that_fails_to_import_in_the_child_is_reported_without_harness_internals(run_cli, tmp_path):
    fake = tmp_path / "site"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(_NO_TORCH_IN_THE_CHILD)
    (tmp_path / "verl").mkdir()
    (tmp_path / "verl" / "__init__.py").write_text("")
    code, out, err = run_cli("verify", str(tmp_path), "--target", "sm61", "--device", "cpu",
                             env={"PYTHONPATH": str(fake)})
    assert code == 2, out + err
    assert f"CANNOT RUN: torch is not importable (No module named 'torch'); {install_command('verify')}" in out
    assert "harness.py" not in out and "rlcompat/verify" not in out and "Traceback" not in out + err


def test_children_get_the_libraries_own_progress_bar_switches_and_a_user_value_is_kept(tmp_path, monkeypatch):
    from rlcompat.verify.runner import child_environment

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "0")  # whatever the user chose stays theirs
    env = child_environment(tmp_path / "verl")
    assert env["HF_HUB_DISABLE_PROGRESS_BARS"] == "1" and env["TQDM_DISABLE"] == "0"


@needs_verl
def test_building_the_tiny_model_prints_no_progress_bar_and_leaves_the_switch_as_it_was(tmp_path, capfd):
    from transformers.utils import logging as hf_logging

    from rlcompat.verify.tiny_model import build_tiny_model

    hf_logging.enable_progress_bar()
    build_tiny_model(tmp_path / "model")
    captured = capfd.readouterr()
    assert "Writing model shards" not in captured.err + captured.out
    assert hf_logging.is_progress_bar_enabled()


def test_gpus_needs_the_trainer_mode(run_cli, tmp_path):
    pkg = tmp_path / "verl"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    code, out, err = run_cli("verify", str(pkg), "--target", "sm61", "--gpus", "2")
    assert code == 2 and "--gpus needs --trainer" in out + err


def test_every_rank_gets_a_whole_share_of_the_tiny_batch(tmp_path):
    from rlcompat.verify.trainer import tiny_overrides

    def overrides(gpus, batch=8):
        return tiny_overrides(tmp_path / "m", tmp_path / "t", tmp_path / "v", steps=2, batch=batch, device="cpu",
                              algo="gae", metrics_file=tmp_path / "metrics.jsonl", gpus=gpus)

    one, two = overrides(1), overrides(2)
    assert one["trainer.n_gpus_per_node"] == "1" and two["trainer.n_gpus_per_node"] == "2"
    micro = ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "critic.ppo_micro_batch_size_per_gpu",
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu")
    assert [one[k] for k in micro] == ["8"] * 4 and [two[k] for k in micro] == ["4"] * 4
    # verl's mini-batch per rank (8 / 2) must be a whole number of micro-batches, and the CPU has two fake GPUs
    assert int(two["actor_rollout_ref.actor.ppo_mini_batch_size"]) // 2 % int(two[micro[0]]) == 0
    assert two["+ray_kwargs.ray_init.num_gpus"] == "2"
