"""bench/fork_load_check.py: the overrides it reads from a launch script and the load check it runs. Offline."""

from __future__ import annotations

from pathlib import Path

from tests.bench_module import load_bench


def _module():
    return load_bench("fork_load_check.py")


CHECK = _module()

SCRIPT = """#!/bin/bash
# python3 -m verl.trainer.main_ppo commented.out=1
export VLLM_ATTENTION_BACKEND=XFORMERS
ray job submit --address=${HEAD_IP}:${HEAD_PORT} \\
  --runtime-env-json='{
        "working_dir": "'${WORKING_DIR}'"
    }' \\
  -- python -m verl.trainer.main_ppo \\
    data.train_files=["$DATA/train.parquet"] \\
    actor_rollout_ref.rollout.name=vllm \\
    +trainer.val_only=false \\
    trainer.total_epochs=5 $@ 2>&1 | tee log.txt
"""


def test_overrides_of_a_continued_command_with_a_multiline_quoted_argument():
    assert CHECK.main_ppo_overrides(SCRIPT) == [[
        "data.train_files=[X/train.parquet]",
        "actor_rollout_ref.rollout.name=vllm",
        "+trainer.val_only=false",
        "trainer.total_epochs=5",
    ]]


def test_a_script_without_the_entry_module_has_no_overrides():
    assert CHECK.main_ppo_overrides("python3 train.py lr=1\n") == []


def _config(tmp_path: Path) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "ppo_trainer.yaml").write_text(
        "data:\n  max_prompt_length: 512\nactor_rollout_ref:\n  rollout:\n    name: vllm\n"
        "    prompt_length: ${data.max_prompt_length}\n", encoding="utf-8")
    return folder


def test_a_key_the_config_has_loads(tmp_path):
    assert CHECK.compose_error(_config(tmp_path), ["actor_rollout_ref.rollout.name=hf"]) is None


def test_a_key_the_config_lacks_fails_and_its_plus_form_loads(tmp_path):
    folder = _config(tmp_path)
    error = CHECK.compose_error(folder, ["actor_rollout_ref.actor.use_torch_compile=False"])
    assert error is not None and "Could not override 'actor_rollout_ref.actor.use_torch_compile'" in error
    assert CHECK.compose_error(folder, ["+actor_rollout_ref.actor.use_torch_compile=False"]) is None


def test_an_interpolation_that_does_not_resolve_fails(tmp_path):
    folder = _config(tmp_path)
    (folder / "ppo_trainer.yaml").write_text("a: ${missing.key}\n", encoding="utf-8")
    assert CHECK.compose_error(folder, []) is not None
