"""scripts/add_rule.py: a new rule is its file plus its registry row, and the catalog refuses it until it has text
and examples (the "required place" is checked by the same tests every rule passes)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "add_rule.py"


@pytest.fixture()
def root(tmp_path):
    shutil.copytree(REPO / "rules", tmp_path / "rules", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _run(root, *args):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"scaffold_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind, base", [("python", "PythonRule"), ("config", "ConfigRule"), ("declared", "DeclaredRule")])
def test_writes_a_loadable_rule_and_its_row_in_code_order(root, kind, base):
    code, out, err = _run(root, "--family", "dtype", "--name", "bf16-in-my-trainer", "--code", "RLC198", "--kind", kind)
    assert code == 0, err
    path = root / "rules" / "dtype" / "bf16_in_my_trainer.py"
    rule = _load(path).Bf16InMyTrainer
    assert rule.code == "RLC198" and rule.name == "bf16-in-my-trainer"
    assert base in [c.__name__ for c in rule.__mro__]
    # what test_rule_metadata_is_complete demands of every rule is still missing: the catalog refuses it
    assert not rule.title and not (rule.bad and rule.good)
    registry = (root / "rules" / "codes.py").read_text()
    codes = [line.split('"')[1] for line in registry.splitlines() if line.startswith('    "RLC')]
    assert '"RLC198": "dtype.bf16_in_my_trainer",' in registry and codes == sorted(codes)
    assert "pytest -q tests/test_rule_examples.py -k RLC198" in out


@pytest.mark.parametrize("kind", ["python", "config", "declared"])
def test_the_author_declares_what_findings_spell_and_the_triggers_follow(root, kind):
    code, _, err = _run(root, "--family", "dtype", "--name", "bf16-in-my-trainer", "--code", "RLC198", "--kind", kind)
    assert code == 0, err
    path = root / "rules" / "dtype" / "bf16_in_my_trainer.py"
    text = path.read_text()
    assert "triggers =" not in text and _load(path).Bf16InMyTrainer.triggers == ()
    path.write_text(text.replace("    names = ()", '    names = ("bf16", "bfloat16")', 1))
    assert _load(path).Bf16InMyTrainer.triggers == ("bf16", "bfloat16")
    # a rule that writes its triggers by hand is refused when its class is made
    path.write_text(text.replace("    names = ()", '    triggers = ("bf16",)', 1))
    with pytest.raises(TypeError, match="writes its triggers"):
        _load(path)


@pytest.mark.parametrize("args, message", [
    (("--family", "dtype", "--name", "x", "--code", "RLC101"), "already dtype.torch_bfloat16_dtype"),
    (("--family", "nope", "--name", "x", "--code", "RLC100"), "not a rule family"),
    (("--family", "dtype", "--name", "Bad_Name", "--code", "RLC198"), "kebab-case"),
    (("--family", "dtype", "--name", "bf16-flag", "--code", "RLC198"), "dtype.bf16_flag: already registered"),
    (("--family", "dtype", "--name", "x", "--code", "R1"), "codes look like RLC123"),
])
def test_refuses_in_one_line_and_writes_nothing(root, args, message):
    before = {p: p.read_bytes() for p in (root / "rules").rglob("*.py")}
    code, out, err = _run(root, *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in (root / "rules").rglob("*.py")} == before
