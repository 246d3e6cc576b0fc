"""A local model's config.json read for RLC209: golden fix of fixtures/models, what is read and what is not, and
that a result depending on another file is never answered from the cache."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rlcompat._toml import load_toml_text
from rlcompat.api import fix_paths, scan_paths
from rlcompat.config import Options
from rlcompat.analysis.model_config import model_shape
from rlcompat.knowledge.targets import resolve_target

CASES = sorted(p for p in (Path(__file__).resolve().parents[1] / "fixtures" / "models").iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fix_matches_golden_file_and_is_idempotent(case, tmp_path):
    options = load_toml_text((case / "fixture.toml").read_text())
    name, target = options["file"], resolve_target(options["target"])
    shutil.copytree(case / "input", tmp_path / "tree")
    work = tmp_path / "tree" / name
    if not (case / "expected").is_dir():  # a hazard without an autofix: found, and left alone by `fix`
        before = work.read_text()
        assert not fix_paths([str(tmp_path / "tree")], target).changed_files and work.read_text() == before
        assert sorted({f.code for f in scan_paths([str(tmp_path / "tree")], target).findings}) == options["remaining"]
        return
    expected = (case / "expected" / name).read_text()
    assert expected != work.read_text(), "a fixture whose fix changes nothing tests nothing"
    report = fix_paths([str(tmp_path / "tree")], target)
    assert not report.errors, report.errors
    assert work.read_text() == expected
    assert not fix_paths([str(tmp_path / "tree")], target).changed_files
    left = sorted({f.code for f in scan_paths([str(tmp_path / "tree")], target).findings})
    assert left == sorted(options["remaining"])


def _model(root: Path, name: str, config) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))


def test_head_dim_from_its_key_from_the_hidden_size_and_from_a_text_config(tmp_path):
    _model(tmp_path, "a", {"head_dim": 256, "hidden_size": 3072, "num_attention_heads": 16, "attention_dropout": 0.1})
    _model(tmp_path, "b", {"hidden_size": 896, "num_attention_heads": 14})
    _model(tmp_path, "c", {"model_type": "gemma3", "text_config": {"head_dim": 256, "attention_dropout": 0.0}})
    script = str(tmp_path / "train.py")
    a, b, c = (model_shape(n, script) for n in ("a", "b", "c"))
    assert (a.head_dim, a.attention_dropout, a.head_dim_key) == (256, 0.1, "head_dim")
    assert (b.head_dim, b.attention_dropout, b.head_dim_key) == (64, None, "hidden_size / num_attention_heads")
    assert (c.head_dim, c.attention_dropout) == (256, 0.0)


def test_a_directory_above_the_scanned_file_is_found(tmp_path):
    _model(tmp_path / "models", "m", {"head_dim": 256})
    (tmp_path / "examples" / "sft").mkdir(parents=True)
    assert model_shape("models/m", str(tmp_path / "examples" / "sft" / "run.py")).head_dim == 256


@pytest.mark.parametrize("config", ["{not json", "[1, 2]", json.dumps({"hidden_size": 100, "num_attention_heads": 3}),
                                    json.dumps({"head_dim": True})])
def test_an_unreadable_or_shapeless_config_says_nothing(tmp_path, config):
    _model(tmp_path, "m", config)
    assert model_shape("m", str(tmp_path / "train.py")) is None


@pytest.mark.parametrize("name", ["google/gemma-7b", "hf://x/y", "${MODEL}", "a b", ""])
def test_a_hub_id_or_a_computed_path_is_not_read(tmp_path, name):
    assert model_shape(name, str(tmp_path / "train.py")) is None


def test_a_result_that_read_a_model_config_is_not_cached(tmp_path):
    tree = tmp_path / "tree"
    _model(tree, "m", {"head_dim": 256, "attention_dropout": 0.1})
    script = tree / "train.py"
    script.write_text('m = AutoModelForCausalLM.from_pretrained("m", attn_implementation="flash_attention_2")\n')
    settings = Options(root=str(tree), respect_gitignore=False)
    target = resolve_target("sm86")
    first = scan_paths([str(tree)], target, settings, jobs=1, use_cache=True)
    assert [f.code for f in first.findings] == ["RLC209"]
    (tree / "m" / "config.json").write_text(json.dumps({"head_dim": 128}))  # the script is unchanged
    assert scan_paths([str(tree)], target, settings, jobs=1, use_cache=True).findings == []
    # a file that reads no other file is still cached
    (tree / "plain.py").write_text("x = 1\n")
    scan_paths([str(tree)], target, settings, jobs=1, use_cache=True)
    again = scan_paths([str(tree)], target, settings, jobs=1, use_cache=True)
    assert [r.from_cache for r in again.results] == [True, False]


def test_dropout_makes_the_flash_attention_finding_an_error_and_its_absence_a_warning():
    tree = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "fa2_head_dim_256_rtx3090" / "input"
    found = {re.search(r"in models/([^/]+)/config\.json", f.message).group(1): f
             for f in scan_paths([str(tree)], resolve_target("sm86")).findings}
    assert found["gemma-7b-dropout"].severity == "error" and found["gemma-7b-dropout"].fix is not None
    assert found["gemma-7b"].severity == "warning" and found["gemma-7b"].fix is None
    assert "before 2.5.5" in found["gemma-7b"].message and "qwen2.5-0.5b" not in found


def test_flex_attention_estimate_names_the_blocks_that_fit():
    tree = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "flex_attention_head_dim_256_t4" / "input"
    [finding] = scan_paths([str(tree)], resolve_target("t4")).findings
    assert finding.severity == "warning" and "64x64 need about 96 KB" in finding.message
    assert '"BLOCK_M": 32, "BLOCK_N": 32, "num_stages": 1' in finding.message and "about 48 KB" in finding.message
