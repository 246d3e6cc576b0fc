"""rules/codes.py is the one registry: every rule file of every family has its row, and each row's module
defines the rule with that code (the loader refuses a mismatch)."""

from __future__ import annotations

from pathlib import Path

from rlcompat.rules import all_rules
from rlcompat.rules.codes import CODES

RULES_DIR = Path(__file__).resolve().parents[1] / "rules"
NOT_RULES = {"__init__", "helpers", "codes"}


def test_every_rule_file_has_a_code_and_every_code_a_file():
    files = {
        f"{p.parent.name}.{p.stem}"
        for p in RULES_DIR.glob("*/*.py")
        if p.stem not in NOT_RULES and p.parent.name != "verl"
    }
    assert files == set(CODES.values())


def test_each_rule_sits_in_the_module_its_code_names():
    located = {rule.code: rule.__module__.removeprefix("rlcompat.rules.") for rule in all_rules()}
    assert located == CODES


def test_rule_files_are_named_after_their_rule():
    for rule in all_rules():
        assert rule.__module__.rsplit(".", 1)[1] == rule.name.replace("-", "_"), rule.code
