"""Every rule's own examples run here: each Bad is reported (and fixed to exactly `fixed`), each Good is not."""

from __future__ import annotations

import pytest

from rlcompat.config import Options
from rlcompat.pipeline.discovery import language_of
from rlcompat.pipeline.runner import Checker, parse
from rlcompat.pipeline.fixer import fix_source
from rlcompat.knowledge.identity import pinned
from rlcompat.rules import all_rules
from rlcompat.pipeline.source import decode
from rlcompat.knowledge.targets import resolve_target

RULES = all_rules()
# Environment rules (RLC5xx) check a machine, not source: tests/test_environment_rules.py runs their examples.
SOURCE_RULES = [r for r in RULES if "environment" not in r.languages]


def _checker(rule, target: str, frameworks) -> Checker:
    # The example's identity is what it pins, never the scanning environment's installed frameworks.
    return Checker(resolve_target(target), Options(select=(rule.code, *rule.examples_select)),
                   identity=pinned(frameworks))


def _run(rule, code: str, target: str, path: str, frameworks=None):
    language = language_of(path)
    checker = _checker(rule, target, frameworks)
    source = decode(path, code.encode("utf-8"), language)
    return checker, source, language, checker.check_source(source, language)


BAD = [pytest.param(r, i, b, id=f"{r.code}-bad{i}") for r in SOURCE_RULES for i, b in enumerate(r.bad)]
GOOD = [pytest.param(r, i, g, id=f"{r.code}-good{i}") for r in SOURCE_RULES for i, g in enumerate(r.good)]


@pytest.mark.parametrize("rule,i,example", BAD)
def test_bad_example_is_reported_and_fixed(rule, i, example):
    checker, source, language, result = _run(rule, example.code, example.target, example.path, example.frameworks)
    assert result.error is None, result.error
    codes = [f.code for f in result.findings]
    assert rule.code in codes, f"{rule.code} did not report:\n{example.code}"
    outcome = fix_source(checker, source, language, unsafe=example.unsafe)
    if example.fixed is None:
        assert not any(f.fix for f in result.findings if f.code == rule.code), "example says no fix, rule offers one"
        assert outcome.fixed == example.code
        return
    assert outcome.fixed == example.fixed
    parse(language, outcome.fixed)
    again = fix_source(checker, decode(example.path, outcome.fixed.encode(), language), language, unsafe=example.unsafe)
    assert again.fixed == outcome.fixed, "fix is not idempotent"
    assert rule.code not in [f.code for f in again.remaining.findings]
    if example.unsafe:
        safe_only = fix_source(checker, source, language, unsafe=False)
        assert safe_only.fixed == example.code, "an unsafe fix was applied without --unsafe-fixes"


@pytest.mark.parametrize("rule,i,example", GOOD)
def test_good_example_is_not_reported(rule, i, example):
    _, _, _, result = _run(rule, example.code, example.target, example.path, example.frameworks)
    assert result.error is None, result.error
    assert rule.code not in [f.code for f in result.findings], f"{rule.code} reported on:\n{example.code}"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_metadata_is_complete(rule):
    assert rule.code.startswith("RLC") and rule.code[3:].isdigit() and len(rule.code) == 6
    assert rule.name == rule.name.lower() and " " not in rule.name
    for attr in ("title", "what", "why", "fix_safety"):
        assert getattr(rule, attr).strip(), f"{rule.code} has no {attr}"
    assert rule.bad and rule.good, f"{rule.code} needs bad and good examples"
    from rlcompat.knowledge.targets import sources

    for s in rule.sources:
        assert s in sources(), f"{rule.code} cites unknown source {s}"
    for s in __import__("re").findall(r"\[(S\d+)\]", rule.why + rule.fix_safety + rule.what):
        assert s in rule.sources, f"{rule.code} cites [{s}] in its text but not in `sources`"
