"""One hazard, one report (issue 27): a value set in a config of the user's own that the launch command names
(`--config-path DIR --config-name NAME`) is reported once, at that YAML line, where a fix edits it; not again at the
command as "not set here, so verl uses its default". Where the scan does not check the YAML itself (`scan
run.sh`), the command reports it, naming the YAML's line; where the command overrides the key, its own value is the
one judged, at the command. Run against the installed verl 0.9.1."""

from __future__ import annotations

import json

import pytest

CONFIG = ("defaults:\n  - ppo_trainer\n  - _self_\nhydra:\n  searchpath:\n    - pkg://verl.trainer.config\n"
          "actor_rollout_ref:\n  rollout:\n    dtype: {dtype}\n")
SCRIPT = ("#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    --config-path={conf} --config-name=my_ppo \\\n"
          "    algorithm.adv_estimator=grpo \\\n    actor_rollout_ref.rollout.name=hf{extra} \\\n"
          "    trainer.n_gpus_per_node=1\n")


@pytest.fixture
def tree(tmp_path, installed_verl_091):
    (tmp_path / "conf").mkdir()

    def make(dtype="bfloat16", extra=""):
        (tmp_path / "conf" / "my_ppo.yaml").write_text(CONFIG.format(dtype=dtype))
        (tmp_path / "run.sh").write_text(SCRIPT.format(conf=tmp_path / "conf", extra=extra))
        return tmp_path

    return make


def _rollout_dtype(run_cli, cwd, *args) -> list[tuple[str, int, str]]:
    code, out, err = run_cli("scan", *args, "--target", "sm61", "--select", "RLC104", "--output-format", "json",
                             "--no-cache", cwd=cwd)
    assert code in (0, 1), err
    return [(f["path"].rsplit("/", 1)[-1], f["line"], f["message"]) for f in json.loads(out)["findings"]
            if f.get("reached", True)]


def test_a_value_the_users_config_sets_is_reported_once_at_its_line(tree, run_cli):
    root = tree()
    [(path, line, message)] = _rollout_dtype(run_cli, root, ".")
    assert (path, line) == ("my_ppo.yaml", 9) and "not set here" not in message
    code, out, _ = run_cli("fix", ".", "--target", "sm61", "--select", "RLC104", "--diff", "--no-cache", cwd=root)
    assert "-    dtype: bfloat16" in out and "+    dtype: float32" in out and "run.sh" not in out


def test_the_script_alone_reports_it_at_the_command_naming_the_yaml_line(tree, run_cli):
    root = tree()
    [(path, line, message)] = _rollout_dtype(run_cli, root, "run.sh")
    assert (path, line) == ("run.sh", 2)
    assert message.startswith("this run composes ") and "conf/my_ppo.yaml:9, which sets `actor_rollout_ref.rollout" \
        ".dtype`" in message and "not set here" not in message


def test_a_good_value_in_the_users_config_draws_nothing(tree, run_cli):
    """Before, the command said "not set here, so verl 0.9.1 uses its default" although the config sets float32."""
    root = tree(dtype="float32")
    assert _rollout_dtype(run_cli, root, ".") == []


def test_the_commands_own_override_is_the_one_judged_at_the_command(tree, run_cli):
    root = tree(dtype="float32", extra=" \\\n    actor_rollout_ref.rollout.dtype=bfloat16")
    [(path, line, message)] = _rollout_dtype(run_cli, root, ".")
    assert (path, line) == ("run.sh", 6) and message.startswith("actor_rollout_ref.rollout.dtype is bfloat16")


def test_run_reaches_the_users_line_and_not_verls_default_it_replaces(tree, run_cli):
    root = tree()
    assert [(p, n) for p, n, _ in _rollout_dtype(run_cli, root, "--run", "run.sh")] == [("my_ppo.yaml", 9)]
