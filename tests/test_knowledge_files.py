"""rlcompat/knowledge/: one loader reads every knowledge file, one parser reads versions and capabilities."""

from __future__ import annotations

import ast
from importlib import resources
from pathlib import Path

import pytest

from rlcompat.knowledge import verl_config
from rlcompat.knowledge import files, versions
from tests.test_cli import invoke


def test_a_malformed_knowledge_file_is_one_error_naming_it(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "targets.toml").write_text("[[target]\nname = 1\n")
    monkeypatch.setattr(resources, "files", lambda package: tmp_path)
    with pytest.raises(files.KnowledgeFileError, match=r"^rlcompat/knowledge/data/targets\.toml: not valid TOML \(") as exc:
        files.load("targets.toml")
    assert "\n" not in str(exc.value)
    with pytest.raises(files.KnowledgeFileError, match=r"^rlcompat/knowledge/data/vllm\.toml: cannot be read"):
        files.load("vllm.toml")


def test_the_command_line_reports_a_malformed_knowledge_file_and_exits_2(monkeypatch, capsys):
    from rlcompat.cli import app as cli_app
    from rlcompat.knowledge import targets

    def broken():
        raise files.KnowledgeFileError("rlcompat/knowledge/data/targets.toml: not valid TOML (x); fix the file")

    monkeypatch.setattr(targets, "all_targets", broken)  # as if its table did not parse
    monkeypatch.setattr("sys.argv", ["rlcompat", "targets"])
    with pytest.raises(SystemExit) as exc:
        cli_app.main()
    assert exc.value.code == 2
    assert capsys.readouterr().err == "rlcompat: rlcompat/knowledge/data/targets.toml: not valid TOML (x); fix the file\n"


def test_every_knowledge_file_loads_and_folders_list_their_files():
    listed = [name for name, _ in files.all_files()]
    assert "targets.toml" in listed and "verl/0.9.1.toml" in listed and "frameworks/trl/0.25.1.toml" in listed
    for name in listed:
        assert isinstance(files.load(*name.split("/")), dict), name
    assert "0.9.1" in files.names("verl") and "trl" in files.folders("frameworks")


def test_every_knowledge_file_parses_the_same_with_the_standard_parser():
    # Knowledge files are read with compiled tomli (rlcompat/_toml.py), whose newer TOML (1.1) accepts more than
    # tomllib: a file must keep to what both read alike, since tomllib reads it where tomli is missing.
    from rlcompat._toml import load_knowledge_text, load_toml_text

    for name, entry in files.all_files():
        text = entry.read_text("utf-8")
        assert load_knowledge_text(text) == load_toml_text(text), name


@pytest.mark.parametrize("text, parsed", [
    ("2.8.0+cu128", (2, 8, 0)), ("0.9.1.dev0", (0, 9, 1)), ("v0.20.0rc1", (0, 20, 0)), (" 2025.10.1", (2025, 10, 1)),
    ("12.8", (12, 8)), ("", ()), ("unknown", ()), (None, ()),
])
def test_one_release_parser(text, parsed):
    assert versions.release(text) == parsed


def test_release_ranges_tags_and_capabilities():
    assert versions.version_in("2.8.0+cu128", "2.8", "2.9") and not versions.version_in("2.9.0", "2.8", "2.9")
    assert versions.local_tag("2.8.0+CU128") == "cu128" and versions.local_tag("2.8.0") is None
    assert versions.capability("7.5") == (7, 5) and versions.capability("12.0") == (12, 0)
    with pytest.raises(ValueError):
        versions.capability("7")


def test_verl_rule_sets_are_chosen_by_the_shared_release_order():
    available = verl_config.available_versions()
    assert list(available) == sorted(available, key=versions.release)
    assert verl_config.choose_version("0.9.1.dev0") == "0.9.1"
    assert verl_config.choose_version("0.8.5") == "0.8.0"
    assert verl_config.choose_version("0.1.0") == available[0] and verl_config.choose_version(None) == available[-1]


# --- knowledge has one home --------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent
# Modules that parse TOML written by users (pyproject.toml, trainer configs, machine snapshots), never knowledge.
USER_TOML_READERS = {"rlcompat/config.py", "rlcompat/lang/tomlfile.py", "rlcompat/lang/pyproject_deps.py",
                     "rlcompat/lang/inline_script.py",  # a script's `# /// script` metadata
                     "rlcompat/doctor/snapshot.py",
                     "rlcompat/analysis/declared_install.py"}  # a project's pyproject.toml and uv.lock
# Modules that walk the installed package's files as bytes (the cache's fingerprint, the rule catalog's digest).
PACKAGE_WALKERS = {"rlcompat/pipeline/cache.py", "rlcompat/cli/version_info.py"}
TOML_MODULES = {"rlcompat._toml", "tomllib", "tomli"}


def _imported_modules(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _modules_outside_knowledge():
    for root in (REPO / "rlcompat", REPO / "rules"):
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if not rel.startswith("rlcompat/knowledge/") and rel != "rlcompat/_toml.py":
                yield rel, ast.parse(path.read_text("utf-8"))


def test_rules_holds_the_rule_catalog_only():
    strays = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "rules").rglob("*") if p.is_file()
                    and p.suffix not in (".py", ".pyc"))
    assert strays == [], f"knowledge files belong in rlcompat/knowledge/data/, not rules/: {strays}"


def test_no_knowledge_table_is_read_outside_rlcompat_knowledge():
    """Outside rlcompat/knowledge/, TOML is parsed only from users' files, and package files are found only to be
    fingerprinted: every knowledge table is read through rlcompat.knowledge (files.load and the typed loaders)."""
    parsing, locating = [], []
    for rel, tree in _modules_outside_knowledge():
        imported = _imported_modules(tree)
        if imported & TOML_MODULES and rel not in USER_TOML_READERS:
            parsing.append(rel)
        if {"importlib.resources", "importlib.resources.files"} & imported and rel not in PACKAGE_WALKERS:
            locating.append(rel)
    assert parsing == [], f"these modules parse TOML themselves; read knowledge through rlcompat.knowledge: {parsing}"
    assert locating == [], f"these modules locate package files; read knowledge through rlcompat.knowledge: {locating}"


def test_the_guard_sees_a_stray_reader():
    tree = ast.parse("def f():\n    from importlib import resources\n    from rlcompat._toml import load_toml_text\n")
    assert {"importlib.resources", "rlcompat._toml"} <= _imported_modules(tree)
