"""Environment rules (RLC5xx): each rule's Bad examples (environment snapshots in TOML) are reported with the
exact error text and a remedy, its Good examples are not, and its facts resolve in the tables."""

from __future__ import annotations

import pytest

from rlcompat.knowledge import torch_wheels
from rlcompat.knowledge.environment import environment_facts
from rlcompat.doctor.rule import EnvFinding, EnvironmentRule
from rlcompat.doctor.snapshot import ENVIRONMENT_PATH, Environment
from rlcompat.rules import all_rules, environment_rules, file_rules
from rlcompat.knowledge.targets import resolve_target, sources

ENV_RULES = [r for r in all_rules() if issubclass(r, EnvironmentRule)]
BAD = [pytest.param(r, b, id=f"{r.code}-bad{i}") for r in ENV_RULES for i, b in enumerate(r.bad)]
GOOD = [pytest.param(r, g, id=f"{r.code}-good{i}") for r in ENV_RULES for i, g in enumerate(r.good)]


def _check(rule, example):
    target = resolve_target(example.target)
    return target, rule(target).check(Environment.from_toml(example.code))


def test_environment_rules_are_rlc5xx_and_never_run_by_scan():
    assert len(ENV_RULES) >= 10
    for rule in ENV_RULES:
        assert rule.code.startswith("RLC5"), rule.code
        assert rule.languages == frozenset({"environment"})
    assert all(not r.code.startswith("RLC5") for r in all_rules() if not issubclass(r, EnvironmentRule))
    # scan and fix load only the file rules, picked by family: the split must be the same as by class.
    assert set(environment_rules()) == set(ENV_RULES)
    assert set(file_rules()) == set(all_rules()) - set(ENV_RULES)


@pytest.mark.parametrize("rule,example", BAD)
def test_bad_environment_is_reported(rule, example):
    target, findings = _check(rule, example)
    assert rule.applies_to(target), f"{rule.code} example on {example.target}, where the rule does not apply"
    mine = [f for f in findings if f.code == rule.code]
    assert mine, f"{rule.code} did not report:\n{example.code}"
    assert example.fixed is None, "environment rules have no autofix"
    for f in mine:
        assert isinstance(f, EnvFinding)
        assert f.target == target.name and f.fix is None
        assert f.error_id in environment_facts()["errors"] and f.error_text.strip()
        assert f.error_id in rule.prevents, f"{rule.code} reports {f.error_id}, not in its `prevents`"
        assert f.remedy and f.remedy in f.message
        assert f.path == ENVIRONMENT_PATH  # examples carry no METADATA path


@pytest.mark.parametrize("rule,example", GOOD)
def test_good_environment_is_not_reported(rule, example):
    _, findings = _check(rule, example)
    assert rule.code not in [f.code for f in findings], f"{rule.code} reported on:\n{example.code}"


def test_every_error_id_and_source_in_the_tables_resolves():
    env = environment_facts()
    known = sources()
    for error_id, e in env["errors"].items():
        assert e["text"].strip() and e["sources"], error_id
        assert set(e["sources"]) <= set(known), error_id
    referenced = [p.get("error") for p in env["packages"].values()] + [p.get("warn_error") for p in env["packages"].values()]
    referenced += [v["error"] for v in env["verl"]] + [t["error"] for t in env["triton_min_version"]]
    for error_id in filter(None, referenced):
        assert error_id in env["errors"], error_id
    for rule in ENV_RULES:
        assert rule.prevents and set(rule.prevents) <= set(env["errors"]), rule.code
    for variant in torch_wheels.wheel_variants():
        assert set(variant.sources) <= set(known)
        assert all(torch_wheels.parse_arch(a) for a in variant.arches), variant


def test_package_finding_points_at_the_distribution_metadata():
    from rlcompat.doctor.snapshot import Package

    env = Environment(packages={"flash-attn": Package("flash-attn", "2.8.3", "/venv/site-packages/flash_attn-2.8.3.dist-info/METADATA")})
    rule = next(r for r in ENV_RULES if r.code == "RLC503")
    [finding] = rule(resolve_target("sm61")).check(env)
    assert finding.path.endswith("flash_attn-2.8.3.dist-info/METADATA")
    assert finding.error_text == "RuntimeError: FlashAttention only supports Ampere GPUs or newer."


def test_troubleshooting_page_is_up_to_date():
    from pathlib import Path

    from rlcompat.doctor.troubleshooting import markdown

    page = Path(__file__).resolve().parents[1] / "docs" / "troubleshooting.md"
    assert page.read_text(encoding="utf-8") == markdown(), "run: python -m rlcompat.doctor.troubleshooting > docs/troubleshooting.md"
    for rule in ENV_RULES:
        assert f"**{rule.code} {rule.name}**" in page.read_text(encoding="utf-8"), rule.code
