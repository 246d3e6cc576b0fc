"""The install commands that README.md and docs/ci.md give work as written: the extras they name exist, their git
URLs name this release's tag, and the git-URL form installs from a clone tagged as docs/releasing.md says."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlcompat._toml import load_toml_text
from rlcompat.release import __version__

REPO = Path(__file__).resolve().parents[1]
HOME = "https://github.com/rlcompat/rlcompat"
DOCS = ["README.md", "docs/ci.md"]


def _pip_installs(name: str) -> list[str]:
    """Each `pip install ...` of rlcompat in a doc, as the shell would pass its requirement (quotes removed)."""
    text = (REPO / name).read_text("utf-8")
    found = []
    for line in text.splitlines():
        match = re.search(r"pip install ((\"[^\"]*\")|(\S+))", line)
        if match and ("rlcompat" in match.group(1) or match.group(1).startswith(("\".", "."))):
            found.append(match.group(1).strip('"'))
    return found


def _extras() -> set[str]:
    return set(load_toml_text((REPO / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"])


@pytest.mark.parametrize("doc", DOCS)
def test_each_documented_install_names_a_real_extra_and_this_release_s_tag(doc):
    installs = _pip_installs(doc)
    assert installs, f"{doc} gives no pip install of rlcompat"
    for requirement in installs:
        assert requirement != "rlcompat", f"{doc}: rlcompat is not on PyPI; install from a checkout or a git URL"
        for extra in re.findall(r"\[([^\]]*)\]", requirement.split(" @ ")[0]):
            assert set(extra.split(",")) <= _extras(), f"{doc}: {requirement}: no such extra"
        if "git+" in requirement:
            assert requirement.endswith(f" @ git+{HOME}@v{__version__}"), requirement


def test_the_readme_installs_from_a_checkout_and_from_git_with_an_extra():
    installs = _pip_installs("README.md")
    assert "." in installs and ".[verify]" in installs
    assert f"rlcompat[verify] @ git+{HOME}@v{__version__}" in installs


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.mark.slow
def test_the_git_url_with_an_extra_installs_this_release(tmp_path):
    """README's `pip install "rlcompat[verify] @ git+URL@vX.Y.Z"`, with URL a local clone tagged as releasing.md
    says. --no-deps: what is tested is the URL, the tag and the extra's name, not PyPI's torch."""
    src = tmp_path / "clone"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv*", ".git", "demo", "*.egg-info", "__pycache__",
                                                             ".rlcompat_cache", ".pytest_cache", ".hypothesis", "build",
                                                             "dist", "bench"))
    _git(src, "init", "-q")
    _git(src, "add", "-A")
    _git(src, "commit", "-qm", "release")
    _git(src, "tag", "-a", f"v{__version__}", "-m", f"rlcompat {__version__}")
    [documented] = [r for r in _pip_installs("README.md") if r.startswith("rlcompat[verify] @ git+")]
    requirement = documented.replace(HOME, src.as_uri())

    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, capture_output=True, timeout=120)
    python = tmp_path / "venv" / "bin" / "python"
    # The pip that venv bundles with Python 3.11 (23.2) takes `git+file:///path` for a path (its packaging wants a
    # host in the URL); the documented `git+https://` form is not affected. A current pip reads both.
    subprocess.run([str(python), "-m", "pip", "install", "-qq", "--disable-pip-version-check", "--upgrade", "pip"],
                   capture_output=True, timeout=300)
    proc = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
                           requirement], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and re.search(r"(?i)connection|network|timed out|proxy", proc.stdout + proc.stderr):
        pytest.skip("PyPI is not reachable for the build requirements")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "does not provide the extra" not in proc.stdout + proc.stderr
    check = ("import importlib.metadata as m, importlib.resources as r; "
             "print(m.version('rlcompat'), r.files('rlcompat.knowledge').joinpath('data', 'targets.toml').is_file())")
    shown = subprocess.run([str(python), "-c", check], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert shown.stdout.split() == [__version__, "True"], shown.stderr
