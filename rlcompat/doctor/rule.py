"""Environment rules (RLC5xx): checks of the installed stack and the machine against a target GPU.

An environment rule is a catalog rule like any other (code, name, what/why/fix_safety, sources, examples), with
`languages = {"environment"}` so that `scan` never runs it, and a `check(env)` method instead of visitors. Its
Bad/Good examples describe an `Environment` in TOML (path "env.toml"); tests/test_environment_rules.py runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rlcompat.knowledge.capabilities import min_capability
from rlcompat.knowledge import versions
from rlcompat.knowledge.environment import error_text, package_facts
from rlcompat.doctor.snapshot import ENVIRONMENT_PATH, Environment, Package
from rlcompat.findings import Finding, Location
from rlcompat.rule import Rule

_START = Location(1, 1, 1, 1)


@dataclass(frozen=True)
class EnvFinding(Finding):
    """A finding about the environment: also the exact error it prevents and what to do."""

    problem: str = ""  # what is wrong (the message without the remedy)
    error_id: str = ""  # "E8": an id in rlcompat/knowledge/data/environment.toml [errors]
    error_text: str = ""  # the message the user would otherwise meet
    remedy: str = ""  # what to do, as a command where there is one


class EnvironmentRule(Rule):
    languages = frozenset({"environment"})
    # The error ids (rlcompat/knowledge/data/environment.toml [errors]) whose messages this rule's findings forestall; the
    # troubleshooting page (docs/troubleshooting.md) is generated from them.
    prevents: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def check(self, env: Environment) -> list[Finding]:
        raise NotImplementedError

    def where(self) -> str:
        """The target in words, for messages: "sm61 (6.1, Pascal: Tesla P40, Tesla P4)"."""
        return self.target.describe()

    def finding(self, message: str, *, error: str, remedy: str, package: Package | None = None,
                severity: str | None = None, **fmt) -> EnvFinding:
        text = error_text(error).format_map(_Defaults(fmt)) if error else ""
        return EnvFinding(
            code=self.code,
            name=self.name,
            message=f"{message}; {remedy}",
            path=(package.metadata_path if package and package.metadata_path else ENVIRONMENT_PATH),
            location=_START,
            target=self.target.name,
            severity=severity or self.severity,
            problem=message,
            error_id=error,
            error_text=text,
            remedy=remedy,
        )


class _Defaults(dict):
    """str.format_map that leaves unknown placeholders as they are ("{name}")."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def below(cc: tuple[int, int], threshold: str | None) -> bool:
    return threshold is not None and cc < versions.capability(threshold)


class PackageRequirementRule(EnvironmentRule):
    """An installed distribution that needs a minimum capability (rlcompat/knowledge/data/environment.toml [packages.NAME]):
    an error below `min_capability` (the installed release's, where rlcompat/knowledge/data/capabilities.toml's row changed between
    releases), a warning below `warn_below`."""

    package_name: str = ""

    @classmethod
    def requirement(cls) -> dict:
        return package_facts(cls.package_name)

    @classmethod
    def applies_to(cls, target) -> bool:
        req = cls.requirement()
        return below(target.capability, req.get("warn_below") or req.get("min_capability"))

    def remedy(self, pkg: Package, failing: bool) -> str:
        raise NotImplementedError

    def check(self, env):
        pkg = env.package(self.package_name)
        if pkg is None:
            return []
        req, cc = self.requirement(), self.target.capability
        minimum = req.get("min_capability")
        if "min_capability_of" in req:
            minimum = min_capability(req["min_capability_of"], pkg.version).text
        if below(cc, minimum):
            failing, need, error, severity = True, minimum, req["error"], "error"
        elif below(cc, req.get("warn_below")):
            failing, need, error, severity = False, req["warn_below"], req.get("warn_error", req.get("error", "")), "warning"
        else:
            return []
        verb = "cannot run" if failing else "is only partly supported"
        message = f"{pkg.name} {pkg.version} is installed but {verb} on {self.where()}: {req['why']} (needs {need}+)"
        return [self.finding(message, error=error, remedy=self.remedy(pkg, failing), package=pkg, severity=severity,
                             gpu=self.target.gpus[0], cc=self.target.capability_text)]
