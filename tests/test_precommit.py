"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit against a scratch repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlcompat.release import __version__

REPO = Path(__file__).resolve().parents[1]


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def _documented_config(hook_repo_path: Path) -> str:
    """docs/ci.md's .pre-commit-config.yaml, with its repo pointed at a local clone and the fix hook (commented out
    there) switched on for the manual stage."""
    text = (REPO / "docs" / "ci.md").read_text("utf-8")
    snippet = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", text, re.S).group(1)
    assert "repo: https://github.com/rlcompat/rlcompat\n" in snippet
    snippet = snippet.replace("https://github.com/rlcompat/rlcompat", str(hook_repo_path))
    fix_hook = "  # - id: rlcompat-fix "
    assert fix_hook in snippet
    return snippet.replace(fix_hook, "  - id: rlcompat-fix\n    stages: [manual]\n  # ")


@pytest.fixture
def hook_repo(tmp_path):
    """A committed copy of this project to serve as the hook repository (pre-commit installs from a git rev), with
    this version's release tag made as docs/releasing.md says."""
    src = tmp_path / "hookrepo"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", ".git", "demo", "*.egg-info", "__pycache__",
                                                             ".rlcompat_cache", ".pytest_cache", ".hypothesis", "build", "dist"))
    _git(src, "init", "-q")
    _git(src, "add", "-A")
    _git(src, "commit", "-qm", "hooks")
    _git(src, "tag", "-a", f"v{__version__}", "-m", f"rlcompat {__version__}")
    return src


@pytest.mark.slow
def test_precommit_blocks_a_bf16_commit_passes_a_clean_one_and_fixes(tmp_path, hook_repo):
    if shutil.which("pre-commit") is None and not (Path(sys.executable).parent / "pre-commit").exists():
        pytest.skip("pre-commit is not installed (pip install -e .[dev])")
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    (work / "pyproject.toml").write_text('[tool.rlcompat]\ntarget = "sm61"\nextend-exclude = ["vendored"]\n')
    config = _documented_config(hook_repo)
    assert f"rev: v{__version__}\n" in config  # the documented rev is this release's tag
    (work / ".pre-commit-config.yaml").write_text(config)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "NO_COLOR": "1"}
    run = lambda *a: subprocess.run([pre_commit, *a], cwd=work, capture_output=True, text=True, env=env, timeout=900)

    (work / "train.py").write_text("import torch\nm = load(p, torch_dtype=torch.bfloat16)\n")
    (work / "vendored").mkdir()
    (work / "vendored" / "v.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    _git(work, "add", "-A")
    blocked = run("run", "--files", "train.py", "vendored/v.py")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "train.py:2:" in blocked.stdout and "RLC101" in blocked.stdout
    assert "vendored" not in blocked.stdout.split("rlcompat (GPU")[1], "configured excludes must hold under pre-commit"
    # pre-commit sets PRE_COMMIT=1: the report names the hook that fixes, not a command the user may not have.
    assert "(1 fixable with the `rlcompat-fix` hook)" in blocked.stdout, blocked.stdout
    only_excluded = run("run", "rlcompat", "--files", "vendored/v.py")
    assert only_excluded.returncode == 0, only_excluded.stdout + only_excluded.stderr  # nothing to check is no error

    fixed = run("run", "rlcompat-fix", "--hook-stage", "manual", "--files", "train.py")
    assert "torch.float32" in (work / "train.py").read_text()
    assert fixed.returncode == 1  # pre-commit fails a hook that modified files, so the user re-stages them

    _git(work, "add", "-A")
    clean = run("run", "rlcompat", "--files", "train.py")
    assert clean.returncode == 0, clean.stdout + clean.stderr
