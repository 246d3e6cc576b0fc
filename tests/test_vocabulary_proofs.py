"""rlcompat/knowledge/data/frameworks/vocabulary.toml says only what the frameworks' own argument parsers do: a flag is a switch only
where a release declares it store_true, and a program's `key=value` words are settings only where it parses them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.knowledge import frameworks
from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target
from tests.shell_views import shell_views


def _settings(text: str) -> dict[str, tuple[str, bool]]:
    return {s.key: (s.value, s.switch) for view in shell_views(text) for s in view.settings}


def _written(text: str) -> list[tuple[str, str, str]]:
    return [(s.key, s.value, s.origin) for view in shell_views(text) for s in view.settings]


def _findings(tmp_path: Path, text: str, target: str) -> list[tuple[str, int]]:
    path = tmp_path / "run.sh"
    path.write_text(text)
    return sorted((f.code, f.location.line) for f in scan_paths([str(path)], resolve_target(target)).findings)


def test_every_vocabulary_row_has_a_proof_and_the_loader_refuses_one_without(monkeypatch):
    vocabulary = frameworks.vocabulary()
    assert {"use_wandb", "ring_attn", "ds.ring_attn", "ds.gradient_checkpointing"}.isdisjoint(vocabulary.switches)
    assert {"swift", "axolotl"}.isdisjoint(vocabulary.override_clis)
    frameworks.vocabulary.cache_clear()
    table = {"switch": [{"flag": "x", "unproven": "kept"}], "verl_config": {"top_keys": []}}
    monkeypatch.setattr(frameworks.files, "load", lambda *parts: table)
    try:
        with pytest.raises(ValueError, match="vocabulary.toml: switch 'x' has no proof"):
            frameworks.vocabulary()
    finally:
        frameworks.vocabulary.cache_clear()


def test_openrlhf_wandb_key_is_a_value_not_a_switch():
    # openrlhf 0.8.11 cli/train_sft.py:246: `--use_wandb` type=str (the key); the examples pass `{wandb_token}`.
    settings = _settings("deepspeed --module openrlhf.cli.train_sft --use_wandb {wandb_token} --bf16\n")
    assert settings["use_wandb"] == ("{wandb_token}", False)
    assert settings["bf16"] == ("", True)


def test_openrlhf_ds_cli_gradient_checkpointing_switches():
    # openrlhf 0.11.2: train_sft.py:168 / train_ppo_ray.py:328, store_true: the next word is no value of theirs.
    sft = _settings("deepspeed --module openrlhf.cli.train_sft --model.gradient_checkpointing_enable extra\n")
    assert sft["model.gradient_checkpointing_enable"] == ("", True)
    ppo = _settings("python3 -m openrlhf.cli.train_ppo_ray --actor.gradient_checkpointing_enable extra\n")
    assert ppo["actor.gradient_checkpointing_enable"] == ("", True)
    assert _settings("python3 -m openrlhf.cli.train_ppo_ray --ds.ring_attn_size 2\n")["ds.ring_attn_size"] == ("2", False)


def test_swift_reads_flags_and_no_key_value_words(tmp_path):
    # ms-swift 3.9.3 raises on words its HfArgumentParser leaves (swift/llm/base.py:31-36): `torch_dtype=bfloat16`
    # selects nothing; `--torch_dtype bfloat16` does.
    assert _settings("swift sft --model Qwen/Qwen2.5-7B-Instruct torch_dtype=bfloat16\n") == {
        "model": ("Qwen/Qwen2.5-7B-Instruct", False)}
    assert _findings(tmp_path, "swift sft --model Qwen/Qwen2.5-7B-Instruct torch_dtype=bfloat16\n", "sm61") == []
    flagged = _findings(tmp_path, "swift sft --model Qwen/Qwen2.5-7B-Instruct \\\n    --torch_dtype bfloat16\n", "sm61")
    assert [line for _, line in flagged] == [2]


def test_axolotl_overrides_are_options_and_other_words_go_to_the_launcher():
    # axolotl 0.21.0: `--bf16=false` overrides the config (cli/config.py:276-280); `bf16=true` is a launcher word.
    assert _written("axolotl train qwen3-lora.yaml --bf16=false bf16=true\n") == [("bf16", "false", "flag")]
