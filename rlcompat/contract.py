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
The kinds are defined beside the front end that runs them; this module only gathers them, with the few parts of the
front ends a rule reads beyond its context (a Python file's import map, how a config spells false, which languages
there are and which files declare an environment, the declared-environment views), so that a rule file names none
of the machinery: rules import this module, the knowledge (rlcompat/knowledge/) and the analyses
(rlcompat/analysis/), nothing else of rlcompat (tests/test_import_graph.py).
"""

from __future__ import annotations

from rlcompat.findings import Edit, Finding, Fix, FixSafety, Location
from rlcompat.lang.declared import Declared, DeclaredRule, GroupView, Variable, from_command
from rlcompat.lang.languages import LANGUAGES, declared_language
from rlcompat.lang.python import Context as PythonContext, ImportMap, PendingFix, PythonRule
from rlcompat.lang.settings import FALSE_WORDS, ConfigContext, ConfigRule, ConfigView, Setting, Span
from rlcompat.pipeline.suppressions import Suppression, SuppressionRule
from rlcompat.rule import ANY_MODULE, VERL_091, Bad, Good, Rule

# Every language rlcompat reads: a rule that reads files of all of them (a suppression comment can stand in any)
ALL_LANGUAGES = frozenset(lang.name for lang in LANGUAGES)

__all__ = [
    "ALL_LANGUAGES", "ANY_MODULE", "Bad", "ConfigContext", "ConfigRule", "ConfigView", "Declared", "DeclaredRule", "Edit",
    "EnvironmentRule", "FALSE_WORDS", "Finding", "Fix", "FixSafety", "Good", "GroupView", "ImportMap", "Location",
    "PackageRequirementRule", "PendingFix", "PythonContext", "PythonRule", "Rule", "Setting", "Span", "Suppression",
    "SuppressionRule", "VERL_091", "Variable", "below", "declared_language", "fix_command", "from_command",
]


def __getattr__(name: str):
    # The machine's rule kinds bring doctor's snapshot model and tables with them: only the RLC5xx rules (doctor) ask
    # for them, so a scan never loads them.
    if name in ("EnvironmentRule", "PackageRequirementRule", "below"):
        from rlcompat.doctor import rule

        return getattr(rule, name)
    if name == "fix_command":  # the command that fixes an installed framework in place (`rlcompat installed`)
        from rlcompat.installed import locate

        return locate.fix_command
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
