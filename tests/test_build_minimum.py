"""The wheel builds with the oldest setuptools that build-system.requires admits, without build isolation
(`pip wheel --no-build-isolation .`, as distributions and offline builders run it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rlcompat._toml import load_toml_text

REPO = Path(__file__).resolve().parents[1]
# The release before the declared minimum: it must fail, or the declared minimum is higher than it need be.
BELOW_MINIMUM = "76.1.0"


def _declared_minimum() -> str:
    requires = load_toml_text((REPO / "pyproject.toml").read_text("utf-8"))["build-system"]["requires"]
    [setuptools] = [r for r in requires if r.startswith("setuptools")]
    match = re.fullmatch(r"setuptools>=([0-9][0-9.]*)", setuptools.replace(" ", ""))
    assert match, f"build-system.requires should name a minimum setuptools, not {setuptools!r}"
    return match.group(1)


def _venv_with_setuptools(where: Path, version: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, timeout=120)
    python = where / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", f"setuptools=={version}"],
                          capture_output=True, text=True, timeout=180)
    if proc.returncode != 0:
        if re.search(r"(?i)connection|network|resolve|timed out|proxy", proc.stderr):
            pytest.skip(f"PyPI is not reachable to install setuptools=={version}")
        raise AssertionError(proc.stderr)
    return python


def _source_copy(where: Path) -> Path:
    """What the wheel is built from, copied so the build leaves nothing (build/, *.egg-info) in the checkout."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, where / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("rlcompat", "rules"):
        shutil.copytree(REPO / name, where / name, ignore=ignore)
    return where


def _wheel(python: Path, source: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", "-w", str(out), str(source)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_wheel_builds_with_the_declared_minimum_setuptools_and_not_below(tmp_path):
    minimum = _declared_minimum()
    (tmp_path / "src").mkdir()
    source = _source_copy(tmp_path / "src")
    python = _venv_with_setuptools(tmp_path / "venv-min", minimum)
    built = _wheel(python, source, tmp_path / "dist")
    assert built.returncode == 0, built.stderr
    [wheel] = (tmp_path / "dist").glob("rlcompat-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        assert "rlcompat/knowledge/data/targets.toml" in zf.namelist()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()

    older = _venv_with_setuptools(tmp_path / "venv-below", BELOW_MINIMUM)
    failed = _wheel(older, source, tmp_path / "dist-below")
    assert failed.returncode != 0 and "project.license" in failed.stdout + failed.stderr
