"""The runner's trigger search answers the front end's questions about the same words (lang/pyspeed/spelled.py), a
config rule module's import reads no verl release's knowledge, and a view's settings by name come in the order they
are written: what a one-file scan no longer does twice or at all, with the same answers."""

from __future__ import annotations

import subprocess
import sys

from rlcompat.config import Options
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang import pysettings
from rlcompat.lang.pyspeed import narrow as pynarrow
from rlcompat.lang.pyspeed.spelled import spelling
from rlcompat.lang.settings import ConfigView, Setting, Span
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.source import decode

TEXT = """import torch
import os
x = torch.bfloat16
cfg = dict(attn_implementation="flash_attention_2", bf16=True)
os.environ["NCCL_P2P_DISABLE"] = "1"
"""


def test_a_word_the_search_looked_for_is_answered_from_it_and_any_other_is_searched_for():
    spells = spelling("a bfloat16 b", (frozenset({"bfloat16", "float16", "liger"}), {"bfloat16"}))
    assert spells("bfloat16") and not spells("liger")
    assert spells("a b") and not spells("nowhere")  # not looked for: searched in the text
    lying = spelling("a bfloat16 b", (frozenset({"bfloat16"}), set()))
    assert not lying("bfloat16")  # answered from the search, not from the text
    assert spelling("a bfloat16", None)("bfloat16")


def test_the_runner_hands_its_search_to_the_narrowing_and_the_settings_reader(monkeypatch):
    handed = {}
    narrow, reading = pynarrow.narrow, pysettings.SettingsReading.__init__

    def spy_narrow(text, rules, readers=(), learnt=lambda seen: None, spells=None):
        handed["narrow"] = (text, spells)
        return narrow(text, rules, readers, learnt, spells)

    def spy_reading(self, text, triggers, spells=None):
        handed["settings"] = (text, spells)
        reading(self, text, triggers, spells)

    monkeypatch.setattr(pynarrow, "narrow", spy_narrow)
    monkeypatch.setattr(pysettings.SettingsReading, "__init__", spy_reading)
    checker = Checker(resolve_target("sm61"), Options())
    found = checker.check_source(decode("train.py", TEXT.encode(), "python"), "python")
    assert found.findings  # the file was parsed and read
    scan = checker.trigger_scan("python")
    for where in ("narrow", "settings"):
        text, spells = handed[where]
        assert text == TEXT and spells is not None and spells != text.__contains__
        for word in (*scan.words, "torch", "no such word"):  # the same answer as a search of the text
            assert spells(word) == (word in TEXT), (where, word)


def test_importing_the_config_helpers_reads_no_release_of_verl():
    code = ("import rlcompat.analysis.confighelpers as h\n"
            "from rlcompat.knowledge import verl_config as v\n"
            "assert v._table.cache_info().currsize == 0, v._table.cache_info()\n"
            "assert h.ENTRY_TRIGGERS == v.entry_triggers() and h.ENTRY_TRIGGERS\n"
            "assert v._table.cache_info().currsize == len(v.available_versions())\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def _setting(key: str, **extra) -> Setting:
    return Setting(key, "1", Span(0, 1), Span(0, 1), **extra)


def test_settings_by_name_come_in_written_order_also_after_more_are_added():
    a, b, c = _setting("x.bf16"), _setting("fp16"), _setting("bf16")
    flag, env = _setting("bf16", flag=True), _setting("bf16", origin="env")
    view = ConfigView("python", [a, flag, b, env, c])
    assert view.by_name("bf16") == [a, c]
    assert view.by_name("fp16", "bf16") == [a, b, c] == view.by_name("bf16", "fp16", "bf16")
    assert view.by_name("tf32") == []
    first = _setting("y.bf16")
    view.settings[:0] = [first]  # a script's exports go first (lang/shell.py)
    assert view.by_name("bf16", "fp16") == [first, a, b, c]
    view.settings = [b, a]  # replaced by as many
    assert view.by_name("bf16", "fp16") == [b, a]
