"""A YAML key the tree's code reads only while a sibling holds one of a few values (issue 28 round 15, from HALOs
4831988: launch.py:302 passes `config.model.reward_model.attn_implementation` only when `reward_model.dtype` is
float16/bfloat16, and config/model/base_model.yaml:70-71 sets dtype float32 beside flash_attention_2): the key reaches
no run, so RLC204 (and the knowledge-backed rules) leave it alone; any way the run could differ keeps the finding
(rlcompat/analysis/guarded_reads.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

GUARDED = ("kwargs = {'attn_implementation': config.model.reward_model.attn_implementation "
           "if config.model.reward_model.dtype in ['float16', 'bfloat16'] else 'eager'}\n")
CONFIG = "policy_dtype: float32\nreward_model:\n  path: null\n  dtype: {dtype}\n  attn_implementation: flash_attention_2\n"


def _attention_lines(tmp_path: Path, files: dict[str, str], target: str = "sm75") -> list[tuple[str, int]]:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = scan_paths([str(tmp_path)], resolve_target(target), jobs=1).findings
    return sorted((Path(f.path).name, f.location.line) for f in found if f.code in ("RLC204", "RLC207"))


@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_a_key_read_only_under_a_sibling_the_file_sets_otherwise_is_not_reported(tmp_path, target):
    files = {"launch.py": GUARDED, "config/model/base_model.yaml": CONFIG.format(dtype="float32")}
    assert _attention_lines(tmp_path, files, target) == []


def test_the_sibling_at_a_tested_value_keeps_it(tmp_path):
    files = {"launch.py": GUARDED, "config/model/base_model.yaml": CONFIG.format(dtype="bfloat16")}
    assert _attention_lines(tmp_path, files) == [("base_model.yaml", 5)]


def test_a_read_outside_the_guard_keeps_it(tmp_path):
    files = {"launch.py": GUARDED + "other = config.model.reward_model.attn_implementation\n",
             "config/model/base_model.yaml": CONFIG.format(dtype="float32")}
    assert _attention_lines(tmp_path, files) == [("base_model.yaml", 5)]


def test_a_guard_on_another_object_keeps_it(tmp_path):
    text = GUARDED.replace("config.model.reward_model.dtype", "config.model.policy_dtype")
    files = {"launch.py": text, "config/model/base_model.yaml": CONFIG.format(dtype="float32")}
    assert _attention_lines(tmp_path, files) == [("base_model.yaml", 5)]


def test_a_tree_with_no_read_keeps_it(tmp_path):
    files = {"launch.py": "print('hi')\n", "config/model/base_model.yaml": CONFIG.format(dtype="float32")}
    assert _attention_lines(tmp_path, files) == [("base_model.yaml", 5)]


def test_a_launch_override_of_the_sibling_keeps_it(tmp_path):
    files = {"launch.py": GUARDED, "config/model/base_model.yaml": CONFIG.format(dtype="float32"),
             "run.sh": "accelerate launch launch.py model=base_model ++model.reward_model.dtype=bfloat16\n"}
    assert _attention_lines(tmp_path, files) == [("base_model.yaml", 5)]


def test_another_yaml_that_sets_the_sibling_keeps_it(tmp_path):
    files = {"launch.py": GUARDED, "config/model/base_model.yaml": CONFIG.format(dtype="float32"),
             "config/model/big.yaml": "defaults:\n  - base_model\nreward_model:\n  dtype: bfloat16\n"}
    assert _attention_lines(tmp_path, files) == [("base_model.yaml", 5)]
