"""The third and later branches of an `if`/`elif` chain are read: bashlex nests them in one reservedword node."""

from __future__ import annotations

from rlcompat.api import scan_source
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang import shell

CHAIN = (
    'if [ "$b" = "a" ]; then\n'
    '  echo a\n'
    'elif [ "$b" = "b" ]; then\n'
    '  echo b\n'
    'elif [ "$b" = "c" ]; then\n'
    '  python train.py --bf16 true\n'
    'else\n'
    '  echo d\n'
    'fi\n'
)


def test_every_branch_of_an_elif_chain_is_a_command_under_its_own_test():
    commands = shell._commands(shell.parse(CHAIN))
    texts = [[w.text for w in c.words] for c in commands]
    assert ["python", "train.py", "--bf16", "true"] in texts and ["echo", "d"] in texts
    [third] = [c for c in commands if c.words and c.words[0].text == "python"]
    assert [w.text for w in third.guards[0].words] == ["[", "$b", "=", "c", "]"]


def test_a_hazard_in_the_third_branch_is_reported():
    findings = scan_source(CHAIN, resolve_target("sm61"), "run.sh", "shell")
    assert any(f.location.line == 6 and "bf16" in f.message for f in findings)
