"""A rule reports only in the languages it declares (`languages`): in a file of one of them, or in code of one of
them that a file of another language holds (a Python heredoc in a shell script, a Makefile's recipes, a notebook's
cells), never on another language's own constructs.

Every finding of every rule's examples and of the fixtures (every rule selected, sm61 and sm75) is placed in the
language of the code it sits in: the innermost embedded block it came out of (lang/embedded.py), else its file's.
"""

from __future__ import annotations

import os

import pytest

from rlcompat.config import Options
from rlcompat.knowledge.identity import pinned
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang import embedded, makefile, notebook, shell
from rlcompat.lang.settings import ConfigRule, ConfigView
from rlcompat.pipeline.discovery import language_of
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.scanned_file import ScannedFile
from rlcompat.pipeline.source import decode
from rlcompat.knowledge.identity import environment_only
from rlcompat.rules import all_rules, rule_class

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_RULES = [r for r in all_rules() if "environment" not in r.languages]
TARGETS = ("sm61", "sm75")


@pytest.fixture
def code_language(monkeypatch):
    """finding -> the language of the embedded code it was found in, for findings that came out of a block (by
    rule and place: a front end may rewrite a finding after placing it, a notebook names the cell in its message)."""
    inner: dict[int, tuple[object, str]] = {}  # id -> (the finding, kept so its id is not reused; its code's language)
    by_place: dict[tuple, str] = {}

    def tagging(original):
        def map_findings(block, findings, index):
            out = original(block, findings, index)
            for before, after in zip(findings, out):
                language = inner[id(before)][1] if id(before) in inner else block.language
                inner[id(after)] = (after, language)
                by_place[(after.code, after.path, after.location)] = language
            return out
        return map_findings

    original = embedded.map_findings
    for module in (embedded, makefile, notebook):
        monkeypatch.setattr(module, "map_findings", tagging(original))
    return lambda finding, file_language: by_place.get((finding.code, finding.path, finding.location), file_language)


def _misplaced(results, code_language) -> list[str]:
    out = []
    for result in results:
        for f in result.findings:
            language = code_language(f, result.language)
            if language not in rule_class(f.code).languages:
                out.append(f"{f.code} ({sorted(rule_class(f.code).languages)}) reported in {language} code: "
                           f"{f.path}:{f.location.line}")
    return out


def _example_results(rule):
    for example in (*rule.bad, *rule.good):
        language = language_of(example.path, explicit=True)
        checker = Checker(resolve_target(example.target), Options(), identity=pinned(example.frameworks))
        yield checker.check_source(decode(example.path, example.code.encode("utf-8"), language), language)


@pytest.mark.parametrize("rule", SOURCE_RULES, ids=[r.code for r in SOURCE_RULES])
def test_every_rule_reports_only_in_its_languages_on_every_example(rule, code_language):
    results = list(_example_results(rule))
    assert any(r.findings for r in results), "the examples report nothing: the check would see nothing"
    assert _misplaced(results, code_language) == []


def _fixture_files() -> list[tuple[str, str]]:
    out = []
    for root, _, names in os.walk(os.path.join(REPO, "fixtures")):
        for name in sorted(names):
            path = os.path.join(root, name)
            language = language_of(path, explicit=True)
            if language is not None:
                out.append((path, language))
    return sorted(out)


@pytest.mark.parametrize("target", TARGETS)
def test_every_rule_reports_only_in_its_languages_on_the_fixtures(target, code_language):
    checker = Checker(resolve_target(target), Options())
    results = [checker.check_file(path, language) for path, language in _fixture_files()]
    languages = {r.language for r in results if r.findings}
    assert {"python", "shell", "yaml", "dockerfile", "notebook", "markdown"} <= languages
    assert _misplaced(results, code_language) == []


class _Sees(ConfigRule):
    """A config rule that records the views it is handed, declaring only Python."""

    code = "RLC999"
    name = "sees"
    languages = frozenset({"python"})
    python_triggers = ("bf16",)
    names = ("bf16",)

    def __init__(self, target) -> None:
        super().__init__(target)
        self.seen: list[str] = []

    def check_config(self, view: ConfigView, ctx) -> None:
        self.seen.append(view.kind)


class _SeesShell(_Sees):
    languages = frozenset({"shell", "python"})


def test_a_script_s_own_commands_are_read_only_by_rules_that_declare_its_language():
    # A shell script can hold Python (a heredoc), so rules declaring Python are handed to the shell front end for
    # it: they must not read the script's own commands.
    text = "python train.py --bf16 true\n"
    target = resolve_target("sm61")
    python_only, both = _Sees(target), _SeesShell(target)
    scanned = ScannedFile("run.sh", environment_only(), text, "shell")
    shell.check(shell.parse(text), text, "run.sh", [python_only, both], target, scanned=scanned)
    assert python_only.seen == [] and both.seen == ["command"]


def test_a_config_rule_naming_python_words_without_declaring_python_is_refused():
    with pytest.raises(TypeError, match="does not declare python"):
        class _Undeclared(ConfigRule):  # noqa: F841 - made to be refused
            code = "RLC998"
            languages = frozenset({"yaml"})
            python_triggers = ("bf16",)
