"""`rlcompat --version`, `-V` and `--version --verbose`."""

from __future__ import annotations

from importlib import metadata, resources

import pytest

from rlcompat.cli import version_info
from rlcompat.knowledge import files
from tests.test_cli import invoke


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_distributions(flag):
    code, out, _ = invoke(flag)
    assert code == 0 and out == f"rlcompat {metadata.version('rlcompat')}\n"


def test_verbose_version_lists_the_catalog_and_every_knowledge_file():
    from rlcompat.rules import environment_rules, file_rules

    code, out, _ = invoke("--version", "--verbose")
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"rlcompat {metadata.version('rlcompat')}"
    n_files, n_machine = len(file_rules()), len(environment_rules())
    assert lines[1] == f"rule catalog {version_info.catalog_version()}: {n_files + n_machine} rules ({n_files} for files, {n_machine} for the machine)"
    listed = {line.split()[0]: line.split()[1] for line in lines[3:]}
    root = files.path()
    on_disk: set[str] = set()
    folders = [(root, "")]
    while folders:  # every knowledge file at any depth: rlcompat/knowledge/data/verl/, rlcompat/knowledge/data/frameworks/<framework>/, ...
        folder, prefix = folders.pop()
        for e in folder.iterdir():
            if e.is_dir() and e.name != "__pycache__":
                folders.append((e, f"{prefix}{e.name}/"))
            elif e.name.endswith(".toml"):
                on_disk.add(prefix + e.name)
    assert set(listed) == on_disk and {"targets.toml", "verl/0.9.1.toml"} <= on_disk
    assert listed["verl/0.9.1.toml"] == "0.9.1"  # declared by the file
    assert listed["targets.toml"].startswith("sha256:") and len(listed["targets.toml"]) == len("sha256:") + 12
    assert invoke("-V", "-v")[1] == out


def test_catalog_version_follows_the_catalog_bytes(tmp_path, monkeypatch):
    rules, data = tmp_path / "rules", tmp_path / "knowledge" / "data"
    (data / "verl").mkdir(parents=True)
    rules.mkdir()
    (rules / "rlc999_x.py").write_text("A = 1\n")
    (data / "targets.toml").write_text('[[target]]\nname = "x"\n')
    (data / "verl" / "1.0.toml").write_text('version = "1.0"\n')
    monkeypatch.setattr(resources, "files", lambda package: rules if package == "rlcompat.rules" else data.parent)
    before = version_info.catalog_version()
    assert [(k.path, k.version) for k in version_info.knowledge_files()][1] == ("verl/1.0.toml", "1.0")
    (data / "verl" / "1.0.toml").write_text('version = "1.0"\n# edited\n')
    edited = version_info.catalog_version()
    assert edited != before
    (rules / "rlc999_x.py").write_text("A = 2\n")
    assert version_info.catalog_version() != edited


def test_version_without_a_command_does_not_need_one():
    code, out, _ = invoke("--help")
    assert code == 0 and "--version" in out and "matrix" in out
