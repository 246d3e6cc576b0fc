"""A rule declares what the code of its findings spells (`names`, `strings`, `calls`, `keywords`, `config_names`,
`verl_commands`, `verl_omitted`: rlcompat/rule.py); its triggers, its Python statement words and the gate over whole
files are derived from that. These tests hold the derived gate to every rule's own examples: a declaration that
misses a word one of its Bad examples needs fails here, naming the rule and the example."""

from __future__ import annotations

import pytest

from rlcompat.contract import Bad, PythonRule, SuppressionRule
from rlcompat.knowledge.targets import resolve_target
from rlcompat.knowledge.verl_config import entry_triggers, omitted_mapping_names
from rlcompat.pipeline.discovery import language_from_content, language_of
from rlcompat.pipeline.catalog import can_match_text
from rlcompat.rules import file_rules, rule_class

# RLC001 runs over a file's suppressions once the others have run, never on its words.
SOURCE_RULES = [r for r in file_rules() if not issubclass(r, SuppressionRule)]


def _missed(cls) -> list[str]:
    """The Bad examples of rule class `cls` whose file its derived triggers and gate would not run it on."""
    from rlcompat.knowledge import launch_helpers

    missed = []
    for i, example in enumerate(cls.bad):
        language = language_from_content(language_of(example.path), example.code)
        rule = cls(resolve_target(example.target))
        # A Python launcher that calls a framework's launch helper also runs the shell config rules its words wake,
        # over the command it hands the helper (pipeline/runner.py `_launch_rules`, lang/pylaunch.py).
        launcher = language == "python" and any(n in example.code for n in launch_helpers.function_names())
        if not (can_match_text(rule, language, example.code)
                or launcher and can_match_text(rule, "shell", example.code)):
            missed.append(f"{cls.code} bad[{i}] ({example.path})")
    return missed


@pytest.mark.parametrize("cls", SOURCE_RULES, ids=[r.code for r in SOURCE_RULES])
def test_the_derived_gate_runs_every_rule_on_each_of_its_bad_examples(cls):
    assert _missed(cls) == []


def test_the_check_catches_a_declaration_that_misses_an_example():
    class SpellsTooLittle(PythonRule):
        code, name = "RLC998", "spells-too-little"
        names = ("bfloat16",)
        bad = (Bad("x = torch.float16\n"), Bad("y = torch.bfloat16\n"))

    assert _missed(SpellsTooLittle) == ["RLC998 bad[0] (example.py)"]


def test_strings_wake_a_rule_on_either_quote():
    assert set(rule_class("RLC109").triggers) == {'"auto"', "'auto'"}


def test_a_rule_declaring_only_the_calls_it_reports_is_woken_by_them():
    rule = rule_class("RLC111")
    assert not rule.names and rule.triggers == rule.calls


def test_verl_commands_wake_a_rule_on_every_entry_word_and_mark_no_python_statement():
    rule = rule_class("RLC204")
    words = set(rule.triggers)
    assert set(entry_triggers()) <= words and set(rule.config_names) <= words
    assert set(omitted_mapping_names("attn-implementation")) <= words
    # Python settings are marked by what its findings spell, never by verl's entry, config or mapping words
    assert set(rule.python_triggers) == set(rule.names)


def test_a_rule_widening_its_triggers_per_instance_keeps_them():
    rule = rule_class("RLC002")(resolve_target("sm61"))
    watched = rule_class("RLC104")(resolve_target("sm61"))
    assert set(watched.triggers) <= set(rule.triggers)
