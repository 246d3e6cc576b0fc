"""Running the environment rules of the catalog over a snapshot."""

from __future__ import annotations

from rlcompat.config import Options
from rlcompat.doctor.rule import EnvironmentRule
from rlcompat.doctor.snapshot import Environment
from rlcompat.findings import Finding
from rlcompat.knowledge.targets import Target


def environment_rules() -> list[type[EnvironmentRule]]:
    from rlcompat.rules import environment_rules as catalog

    return [r for r in catalog() if issubclass(r, EnvironmentRule)]


def run_checks(env: Environment, target: Target, settings: Options | None = None) -> list[Finding]:
    """Every selected environment rule that applies to `target`, in code order."""
    settings = settings or Options()
    findings: list[Finding] = []
    for rule_cls in environment_rules():
        if rule_cls.applies_to(target) and settings.is_selected(rule_cls.code):
            findings.extend(rule_cls(target).check(env))
    return findings
