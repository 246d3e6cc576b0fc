"""The rule contract: everything a rule file imports to be a rule, from one place.

A rule is a class of one of the kinds below, by what it reads (rules/ holds one rule per file; CONTRIBUTING.md and
scripts/add_rule.py start one):

- `PythonRule`: a Python file's syntax tree, visited node by node (`visit_<Node>(node, ctx)` with a `PythonContext`);
  a fix is a `PendingFix` or `Edit`s.
- `ConfigRule`: the settings of configs and launch commands in every language (YAML, shell, JSON, TOML, notebooks,
  Python's argparse defaults and config fields), as `ConfigView`s of `Setting`s with a `ConfigContext`.
- `DeclaredRule`: what a project declares it installs (requirements, pyproject.toml, setup.py, conda files,
  Dockerfiles, `pip install` lines), as `Declared` groups.
- `EnvironmentRule` / `PackageRequirementRule`: the machine `doctor` sees (its snapshot), never a file.
- `SuppressionRule`: a file's inline suppressions once the other rules' findings are known (RLC001).

Every context carries the target and the scanned file (`ctx.scanned`: its language and the identity of its tree,
resolved by the caller). Findings carry a message and, where a rule can fix, a `Fix` of `Edit`s with its safety.
The kinds are defined beside the front end that runs them; this module only gathers them, so that a rule file
names none of the machinery.
"""

from __future__ import annotations

from rlcompat.findings import Edit, Finding, Fix, FixSafety, Location
from rlcompat.lang.declared import Declared, DeclaredRule
from rlcompat.lang.python import Context as PythonContext, PendingFix, PythonRule
from rlcompat.lang.settings import ConfigContext, ConfigRule, ConfigView, Setting, Span
from rlcompat.pipeline.suppressions import Suppression, SuppressionRule
from rlcompat.rule import ANY_MODULE, VERL_091, Bad, Good, Rule

__all__ = [
    "ANY_MODULE", "Bad", "ConfigContext", "ConfigRule", "ConfigView", "Declared", "DeclaredRule", "Edit", "EnvironmentRule",
    "Finding", "Fix", "FixSafety", "Good", "Location", "PackageRequirementRule", "PendingFix", "PythonContext",
    "PythonRule", "Rule", "Setting", "Span", "Suppression", "SuppressionRule", "VERL_091",
]


def __getattr__(name: str):
    # The machine's rule kinds bring doctor's snapshot model and tables with them: only the RLC5xx rules (doctor) ask
    # for them, so a scan never loads them.
    if name in ("EnvironmentRule", "PackageRequirementRule"):
        from rlcompat.doctor import rule

        return getattr(rule, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
