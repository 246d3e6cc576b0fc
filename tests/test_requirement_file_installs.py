"""`pip install -r FILE` in an install script installs what FILE lists (issue 28 round 13, torchforge v0.1.0-rc1's
scripts/install.sh:196 and .github/packaging/vllm_reqs_12_8.txt): the command is judged by the file's requirements,
at the FILE word, and never edited there."""

from __future__ import annotations

from pathlib import Path

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target


def _found(path: Path, target: str, code: str) -> dict[int, str]:
    return {f.location.line: f.message for f in scan_paths([str(path)], resolve_target(target)).findings
            if f.code == code}


def _tree(tmp_path: Path, script: str) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "reqs").mkdir()
    (tmp_path / "reqs" / "vllm_reqs.txt").write_text("# generated\nfastapi\ntorch==2.9.0+cu128\n")
    (tmp_path / "reqs" / "old.txt").write_text("torch==2.6.0\n")
    (tmp_path / "scripts").mkdir()
    path = tmp_path / "scripts" / "install.sh"
    path.write_text(script)
    return path


def test_a_requirements_file_an_install_script_installs_is_judged_at_the_command(tmp_path):
    script = ("#!/bin/bash\n"
              "pip install -r reqs/vllm_reqs.txt\n"  # read as run from the tree's root
              "pip install -r reqs/old.txt\n"  # torch 2.6.0: PyPI's cu124 build has sm_60 kernels
              "pip install -r reqs/missing.txt\n"  # a file the tree does not hold: nothing known
              "cd reqs && pip install --requirement vllm_reqs.txt\n")
    path = _tree(tmp_path, script)
    found = _found(path, "sm61", "RLC601")
    assert sorted(found) == [2, 5], found
    assert "installed from reqs/vllm_reqs.txt:3" in found[2]
    assert not _found(path, "sm75", "RLC601")  # cu128 has sm_75
    fix_paths([str(path)], resolve_target("sm61"))
    assert path.read_text() == script  # the pin is the file's: nothing is edited in the command


def test_a_requirements_file_alone_is_judged_where_it_is_written(tmp_path):
    path = _tree(tmp_path, "#!/bin/bash\necho nothing installed\n")
    found = _found(tmp_path / "reqs" / "vllm_reqs.txt", "sm61", "RLC601")
    assert list(found) == [3], found
    assert not _found(path, "sm61", "RLC601")
