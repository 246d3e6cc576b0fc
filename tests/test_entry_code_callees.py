"""A launch command's entry program whose hazards sit one step away (issue 28 round 11, the fork-ttrl sibling
fork-ttrl-openrlhf): an OpenRLHF-derived package renamed to its own name (TTRL at bc522b3, `ttrl.cli.train_ppo_naive`)
builds its bf16 vLLM engines in a controller class of another module (RLC124), and its `--packing_samples` turns the
program's own `--flash_attn` switch on (RLC211). The trees here are written in that layout: the package under code/
beside setup.py, the script under code/scripts/, the command started through `ray job submit -- python -m`."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat import api
from rlcompat.knowledge import identity
from rlcompat.knowledge.targets import resolve_target

SM61, SM75, SM80 = resolve_target("sm61"), resolve_target("sm75"), resolve_target("sm80")

ENGINES = '''import ray


def create_vllm_engines(count, pretrain):
    import vllm

    return [vllm.LLM(model=pretrain,
                     dtype="bfloat16") for _ in range(count)]
'''
CONTROLLER = '''from pkg.models.vllm_engine import create_vllm_engines

STEPS = 3


class NaiveController:
    def __init__(self, args):
        self.args = args

    def fit(self):
        if self.args.vllm_num_engines is not None and self.args.vllm_num_engines > 0:
            self.engines = create_vllm_engines(self.args.vllm_num_engines, self.args.pretrain)
'''
ENTRY = '''import argparse

from pkg.controller.naive import NaiveController

parser = argparse.ArgumentParser()
parser.add_argument("--pretrain")
parser.add_argument("--vllm_num_engines", type=int, default=None)
parser.add_argument("--flash_attn", action="store_true", default=False)
parser.add_argument("--packing_samples", action="store_true", default=False)
args = parser.parse_args()
if args.packing_samples:
    if not args.flash_attn:
        args.flash_attn = True
NaiveController(args).fit()
'''
COMMAND = 'ray job submit --address="http://localhost:8265" -- python -m pkg.cli.train \\\n   --pretrain m \\\n{extra}'


@pytest.fixture(autouse=True)
def fresh():
    identity.clear_caches()
    yield
    identity.clear_caches()


def _tree(tmp_path: Path, extra: str, entry: str = ENTRY) -> Path:
    files = {"code/setup.py": "from setuptools import setup\nsetup(name='pkg')\n", "code/pkg/__init__.py": "",
             "code/pkg/cli/__init__.py": "", "code/pkg/cli/train.py": entry,
             "code/pkg/controller/__init__.py": "", "code/pkg/controller/naive.py": CONTROLLER,
             "code/pkg/models/__init__.py": "", "code/pkg/models/vllm_engine.py": ENGINES,
             "code/scripts/run.sh": COMMAND.format(extra=extra)}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / "code" / "scripts" / "run.sh"


def _found(path: Path, target, code: str):
    return [f for f in api.scan_paths([str(path)], target, jobs=1).findings if f.code == code]


def test_engines_a_controller_of_another_module_builds_are_reported_at_the_engine_count(tmp_path):
    script = _tree(tmp_path, "   --vllm_num_engines 4\n")
    for target in (SM61, SM75):
        found = _found(script, target, "RLC124")
        assert [f.location.line for f in found] == [3]
        assert "pkg/models/vllm_engine.py:8" in found[0].message
    assert _found(script, SM80, "RLC124") == []


@pytest.mark.parametrize("extra", ["   --vllm_num_engines 0\n", "   --flash_attn\n"])
def test_a_controller_that_builds_no_engine_for_the_command_is_not_reported(tmp_path, extra):
    # the controller builds engines only for a positive count: none passed, or 0
    assert _found(_tree(tmp_path, extra), SM75, "RLC124") == []


def test_a_module_the_entry_imports_without_calling_is_not_followed(tmp_path):
    entry = ENTRY.replace("from pkg.controller.naive import NaiveController", "from pkg.controller.naive import STEPS")
    entry = entry.replace("NaiveController(args).fit()", "print(STEPS)")
    assert _found(_tree(tmp_path, "   --vllm_num_engines 4\n", entry), SM75, "RLC124") == []


def test_packing_that_turns_the_flash_attn_switch_on_is_reported_at_the_switch(tmp_path):
    script = _tree(tmp_path, "   --packing_samples\n")
    found = _found(script, SM75, "RLC211")
    assert [f.location.line for f in found] == [3]
    assert "set flash_attn to True (pkg/cli/train.py:13)" in found[0].message
    assert _found(script, SM80, "RLC211") == []
    assert _found(_tree(tmp_path, "   --flash_attn\n"), SM75, "RLC211") == []


@pytest.mark.parametrize("entry", [
    ENTRY.replace("args.flash_attn = True", "args.flash_attn = False"),  # switched off, not on
    ENTRY.replace("if args.packing_samples:", "if not args.packing_samples:"),  # the other way
])
def test_a_switch_set_off_or_under_a_negated_test_is_not_reported(tmp_path, entry):
    assert _found(_tree(tmp_path, "   --packing_samples\n", entry), SM75, "RLC211") == []


def test_a_src_layout_tree_is_followed_into_its_controller_module(tmp_path):
    # The package under code/src/ (a src layout, installed), its entry run by path: the entry's
    # `from pkg.controller.naive import ...` is code/src/pkg/controller/naive.py.
    script = _tree(tmp_path, "   --vllm_num_engines 4\n")
    (tmp_path / "code" / "src").mkdir()
    (tmp_path / "code" / "pkg").rename(tmp_path / "code" / "src" / "pkg")
    script.write_text(script.read_text().replace("python -m pkg.cli.train", "python src/pkg/cli/train.py"))
    found = _found(script, SM75, "RLC124")
    assert [f.location.line for f in found] == [3]
    assert "src/pkg/models/vllm_engine.py:8" in found[0].message


def test_the_entry_program_is_parsed_once_for_both_rules_that_read_it(tmp_path, monkeypatch):
    from rlcompat.analysis import entry_code

    parsed: list[str] = []
    real = entry_code._parse

    def counting(path):
        parsed.append(path)
        return real(path)

    monkeypatch.setattr(entry_code, "_parse", counting)
    script = _tree(tmp_path, "   --vllm_num_engines 4 \\\n   --packing_samples\n")
    found = api.scan_paths([str(script)], SM75, jobs=1).findings
    assert {"RLC124", "RLC211"} <= {f.code for f in found}
    assert [p for p in parsed if p.endswith("train.py")] == [str(tmp_path / "code" / "pkg" / "cli" / "train.py")]
