"""RLC401's `rollout.name=hf` fix: offered only where the plugin is installed or asked for; the launch-script reader
and the override swap that `verify --trainer` uses."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from rlcompat.release import install_command
from rlcompat.knowledge import hf_rollout
from rlcompat.verify.launch_script import LaunchScriptError, main_ppo_overrides
from rlcompat.verify.trainer import merge_overrides

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "fixtures" / "scripts" / "grpo_vllm_bf16" / "input.sh"
RULE = "rlcompat.rules.rollout.rollout_engine_unsupported"


def _scan(run_cli, path, env):
    code, out, err = run_cli("scan", str(path), "--target", "sm61", "--select", "RLC401", "--output-format", "json",
                             "--no-cache", env=env)
    return code, [f for f in json.loads(out)["findings"] if f["code"] == "RLC401"]


def test_fix_offered_when_asked_and_not_when_refused(run_cli, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT.read_text())
    (tmp_path / "requirements.txt").write_text("verl==0.9.1\n")  # the release the hf rollout supports
    code, offered = _scan(run_cli, script, {"RLCOMPAT_HF_ROLLOUT": "1"})
    assert code == 1 and len(offered) == 1
    assert offered[0]["fix"] and "hf" in json.dumps(offered[0]["fix"])
    assert "slower than vLLM" in offered[0]["message"]
    code, refused = _scan(run_cli, script, {"RLCOMPAT_HF_ROLLOUT": "0"})
    assert code == 1 and len(refused) == 1 and not refused[0].get("fix")
    assert install_command("verl") in refused[0]["message"]
    # the fix is unsafe: a plain `fix` leaves the engine alone, --unsafe-fixes switches it
    run_cli("fix", str(script), "--target", "sm61", "--select", "RLC401", env={"RLCOMPAT_HF_ROLLOUT": "1"})
    assert "rollout.name=vllm" in script.read_text()
    run_cli("fix", str(script), "--target", "sm61", "--select", "RLC401", "--unsafe-fixes",
            env={"RLCOMPAT_HF_ROLLOUT": "1"})
    assert "rollout.name=hf" in script.read_text() and "rollout.name=vllm" not in script.read_text()
    code, after = _scan(run_cli, script, {"RLCOMPAT_HF_ROLLOUT": "1"})
    assert code == 0 and after == []


def test_availability_is_read_from_entry_point_metadata(monkeypatch):
    import importlib

    rule = importlib.import_module(RULE)
    monkeypatch.delenv("RLCOMPAT_HF_ROLLOUT", raising=False)
    ours = importlib.metadata.EntryPoint("rlcompat_hf_rollout", "rlcompat.verl_plugin.entry", "verl.plugins")
    other = importlib.metadata.EntryPoint("x", "someone.else", "verl.plugins")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "verl" else None)
    for plugins, want in (([ours], True), ([other], False), ([], False)):
        monkeypatch.setattr(hf_rollout, "_installed", None)
        monkeypatch.setattr(importlib.metadata, "entry_points", lambda group=None, p=plugins: p)
        assert rule.hf_rollout_available() is want


def test_launch_script_overrides_and_swap():
    found = main_ppo_overrides(SCRIPT)
    assert "actor_rollout_ref.rollout.name=vllm" in found and "data.train_batch_size=32" in found
    assert 'trainer.logger=["console"]' in found
    tiny = {"data.train_batch_size": "4", "actor_rollout_ref.model.path": "/m", "algorithm.adv_estimator": "gae"}
    merged, swapped = merge_overrides(found, tiny, keep_algo=True)
    assert "data.train_batch_size=4" in merged and "data.train_batch_size=32" not in merged
    assert "actor_rollout_ref.model.path=/m" in merged
    assert "algorithm.adv_estimator=grpo" in merged and "algorithm.adv_estimator=gae" not in merged  # the script's
    assert "actor_rollout_ref.rollout.name=vllm" in merged  # not a size: kept, so verify tests what the script runs
    assert "data.train_batch_size" in swapped and "actor_rollout_ref.model.path" in swapped
    assert "actor_rollout_ref.rollout.name" not in swapped


def test_launch_script_without_trainer_is_a_clear_error(tmp_path):
    script = tmp_path / "x.sh"
    script.write_text("echo hello\n")
    with pytest.raises(LaunchScriptError, match="no `python -m verl.trainer.main_ppo`"):
        main_ppo_overrides(script)
    with pytest.raises(LaunchScriptError, match="cannot read"):
        main_ppo_overrides(tmp_path / "missing.sh")


def test_trainer_mode_usage_errors_exit_2(run_cli, tmp_path):
    tree = tmp_path / "verl"
    tree.mkdir()
    (tree / "__init__.py").write_text("")
    code, _, err = run_cli("verify", str(tree), "--target", "sm61", "--script", str(SCRIPT))
    assert code == 2 and "--script needs --trainer" in err
    code, _, err = run_cli("verify", str(tree), "--target", "sm61", "--trainer", "--script", str(tmp_path / "nope.sh"))
    assert code == 2 and "nope.sh" in err
    code, _, err = run_cli("verify", str(tree), "--target", "sm61", "--trainer", "--model-size", "7b")
    assert code == 2 and "--model-size" in err
