"""Scanning and fixing read code; they never run it (docs/security.md). verify runs it only in an offline child."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from rlcompat.cli.app import app
from rlcompat.verify.runner import child_environment


def _booby_trapped_tree(root: Path, marker: Path) -> None:
    """Every file would create `marker` if anything executed, imported or expanded it."""
    touch = f"open({str(marker)!r}, 'w').write('ran')"
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"{touch}\n")
    (pkg / "model.py").write_text(f"import torch\n{touch}\nx = t.to(torch.bfloat16)\n")
    (root / "setup.py").write_text(f"{touch}\n")
    (root / "conftest.py").write_text(f"{touch}\n")
    (root / "sitecustomize.py").write_text(f"{touch}\n")
    (root / "verl").mkdir()
    (root / "verl" / "version").mkdir()
    (root / "verl" / "version" / "version").write_text("0.9.1\n")  # read as text, never imported
    (root / "verl" / "__init__.py").write_text(f"{touch}\n")
    (root / "config.yaml").write_text(
        f"trap: !!python/object/apply:os.system ['touch {marker}']\n"
        "actor_rollout_ref:\n  rollout:\n    dtype: bfloat16\n"
    )
    (root / "run.sh").write_text(
        f"#!/bin/bash\nOUT=$(touch {marker})\necho `touch {marker}`\n"
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16 \\\n"
        f"    trainer.name=$(touch {marker})\n"
    )


def test_scan_and_fix_never_execute_import_or_expand_the_tree(tmp_path):
    marker = tmp_path / "MARKER"
    tree = tmp_path / "tree"
    tree.mkdir()
    _booby_trapped_tree(tree, marker)
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(tree)  # as a user runs it: from inside the tree, where sitecustomize.py and conftest.py sit
    try:
        scanned = runner.invoke(app, ["scan", ".", "--target", "sm61", "--no-cache", "--output-format", "json"])
        fixed = runner.invoke(app, ["fix", ".", "--target", "sm61", "--unsafe-fixes", "--no-cache"])
    finally:
        os.chdir(cwd)
    assert scanned.exit_code == 1, scanned.output
    found = {(Path(f["path"]).name, f["code"]) for f in json.loads(scanned.output)["findings"]}
    assert ("model.py", "RLC101") in found
    assert {"config.yaml", "run.sh"} <= {name for name, _ in found}
    assert fixed.exit_code in (0, 1), fixed.output
    assert "torch.float32" in (tree / "pkg" / "model.py").read_text()
    assert not marker.exists()
    # The YAML tag and the shell substitutions are still there, as written: read, never acted on.
    assert "!!python/object/apply:os.system" in (tree / "config.yaml").read_text()
    assert f"$(touch {marker})" in (tree / "run.sh").read_text()


def test_verify_child_is_offline_and_puts_the_tree_first(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    package = tmp_path / "verl"
    env = child_environment(package)
    assert env["HF_HUB_OFFLINE"] == "1" and env["TRANSFORMERS_OFFLINE"] == "1" and env["HF_DATASETS_OFFLINE"] == "1"
    assert env["WANDB_MODE"] == "disabled"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)
