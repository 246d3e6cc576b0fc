"""Golden-file tests for verl package trees (fixtures/verl_trees/<case>/input/verl/...): a verl config-group file is
read with the knowledge of the version its tree says and the mounts of that version, so these fixtures are whole
trees. Fix a copy, compare every file with expected/, fix again (no change), and only `remaining` codes are left."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rlcompat.knowledge import identity, verl_config as vk
from rlcompat._toml import load_toml_text
from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

CASES = sorted(p for p in (Path(__file__).resolve().parents[1] / "fixtures" / "verl_trees").iterdir() if p.is_dir())


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fix_matches_golden_tree_and_is_idempotent(case, tmp_path):
    identity.clear_caches()
    vk.package_root.cache_clear()
    options = load_toml_text((case / "fixture.toml").read_text())
    target, unsafe = resolve_target(options["target"]), options.get("unsafe", False)
    tree = tmp_path / "tree"
    shutil.copytree(case / "input", tree)
    expected = _files(case / "expected")
    assert expected != _files(tree), "a fixture whose fix changes nothing tests nothing"
    report = fix_paths([str(tree)], target, unsafe=unsafe)
    assert not report.errors, report.errors
    assert _files(tree) == expected
    assert not fix_paths([str(tree)], target, unsafe=unsafe).changed_files, "a second fix changed a file again"
    left = sorted({f.code for f in scan_paths([str(tree)], target).findings})
    assert left == sorted(options["remaining"])
