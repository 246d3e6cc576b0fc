"""pip's general options before the command (`pip -v install x`, `uv pip -v install x`) still make an install: the
packages it names are judged as those of `pip install x` (slime v0.3.0 docker/Dockerfile:25 installs flash-attn with
`pip -v install`; pip's parser reads general options before the command name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.install_steps import _install_index
from rlcompat.knowledge.targets import resolve_target


@pytest.mark.parametrize("command", [
    "RUN MAX_JOBS=64 pip -v install flash-attn==2.7.4.post1 --no-build-isolation",
    "RUN uv pip -v install --no-build-isolation flash-attn==2.8.3",
    "RUN pip --no-cache-dir -q install flash-attn==2.8.3",
])
def test_general_switches_before_install_keep_the_install(tmp_path: Path, command: str):
    (tmp_path / "Dockerfile").write_text(f"FROM python:3.11\n{command}\n")
    findings = scan_paths([str(tmp_path / "Dockerfile")], resolve_target("sm75")).findings
    [finding] = [f for f in findings if f.code == "RLC603"]
    assert finding.location.line == 2 and "flash-attn" in finding.message


def test_an_option_with_a_value_or_another_command_is_not_an_install():
    assert _install_index(["pip", "-v", "install", "x"]) == 2
    assert _install_index(["pip", "download", "x"]) is None
    assert _install_index(["pip", "-v", "uninstall", "x"]) is None
    # `--log FILE` takes a value: FILE would be read as the command, so no install is claimed
    assert _install_index(["pip", "--log", "install"]) is None
