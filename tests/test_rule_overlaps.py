"""One hazard, one finding in a Python file: a config rule's finding over the file's settings yields to a Python
rule's on the same characters, whether that Python rule ran or was deselected (rlcompat/pipeline/overlaps.py)."""

from __future__ import annotations

import dataclasses

from rlcompat import api
from rlcompat.config import Options
from rlcompat.knowledge.targets import resolve_target
from rlcompat.pipeline import overlaps

# RLC103 (the Python rule over `bf16=True`) and RLC107 (the config rule over bf16 settings, Python's included)
# report the same keyword.
TEXT = "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', bf16=True)\n"


def _codes(**options) -> list[str]:
    settings = dataclasses.replace(Options(), **options)
    return [f.code for f in api.scan_source(TEXT, resolve_target("sm61"), path="train.py", settings=settings)]


def test_the_python_rule_reports_the_shared_setting_once():
    assert _codes() == ["RLC103"]


def test_a_deselected_python_rule_still_silences_the_config_rule():
    assert _codes(ignore=("RLC103",)) == []
    assert _codes(select=("RLC107",)) == []


def test_the_config_rule_reports_where_no_python_rule_does(monkeypatch):
    # Without the deselected rule's findings to yield to, the config rule's own finding is what is left: the
    # silence above is the overlap decision, not a rule that never ran.
    monkeypatch.setattr(overlaps, "_unselected_python_findings", lambda *args: [])
    assert _codes(ignore=("RLC103",)) == ["RLC107"]
