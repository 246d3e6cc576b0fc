"""A big text's narrowing pass and its Python settings read in forked processes (rlcompat/lang/pyspeed/forked.py) give
what the pass gives in the process itself: the narrowed text, where the chunks and the top-level statements are, and
the settings; a child that fails leaves the work to the process; and nothing is forked where it cannot help."""

from __future__ import annotations

import os
import threading

import pytest

from rlcompat.config import Options
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang import pysettings
from rlcompat.lang.pyspeed import chunks, forked, narrow as narrowing
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.source import decode, read_bytes
from tests.test_chunks import SETTINGS_TRIGGERS
from tests.test_narrowing_safety import PYTHON_RULES
from tests.test_plain_libcst import _fixture_files

# A table with settings and dtype lists (torch's `op_db` in small), a dataclass of settings, and code a rule reports.
BIG = "".join(
    f"import torch\n"
    f"from transformers import TrainingArguments\n"
    f"\n"
    f"table_{i} = [\n"
    + "".join(f"    OpInfo('op{j}', dtypes=(torch.float32, torch.bfloat16), supports_out={j % 2 == 0}),\n"
              for j in range(40))
    + "]\n"
    f"args_{i} = TrainingArguments(output_dir='out', bf16=True, learning_rate=1e-5)\n"
    f"\n"
    f"def cast_{i}(x):\n"
    f"    return x.to(torch.bfloat16)\n"
    for i in range(40))


@pytest.fixture
def small_chunks(monkeypatch):
    """Texts of a few KB are read in chunks, and forked."""
    monkeypatch.setattr(chunks, "CHUNK_CHARS", 2_000)
    monkeypatch.setattr(chunks, "WHOLE_MAX_CHARS", 4_000)
    monkeypatch.setattr(forked, "FORK_MIN_CHARS", 4_000)


def _rules():
    target = resolve_target("sm61")
    return [cls(target) for cls in PYTHON_RULES if cls.applies_to(target)]


def _in_process(text: str, rules: list):
    reading = pysettings.SettingsReading(text, SETTINGS_TRIGGERS)
    learnt: list = []
    narrowed = narrowing.narrow(text, rules, [reading], learnt.append)
    return narrowed, (learnt[-1] if learnt else None)


def _forks(monkeypatch) -> list[int]:
    """The processes this one forks from now on."""
    started: list[int] = []
    real = os.fork

    def counting() -> int:
        pid = real()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting)
    return started


@pytest.mark.parametrize("text", [BIG, BIG.replace("\n", "\r\n")], ids=["table", "crlf"])
def test_the_pass_read_in_forked_processes_gives_what_it_gives_here(text, small_chunks, monkeypatch):
    rules = _rules()
    narrowed, seen = _in_process(text, rules)
    assert narrowed is not None and seen is not None and seen.tree is None and len(seen.cuts) > 1
    started = _forks(monkeypatch)
    got = forked.narrow(text, rules, SETTINGS_TRIGGERS)
    assert len(started) == 2  # the narrowing and the settings, each in its own process
    assert got is not None
    forked_narrowed, forked_seen = got
    assert forked_narrowed == narrowed
    assert forked_seen.text is text and forked_seen.tree is None
    assert (forked_seen.spans, forked_seen.cuts) == (seen.spans, seen.cuts)
    assert forked_seen.extra == seen.extra and any(seen.extra.values())
    # what the check reads later finds them there, as it finds what the pass left
    assert pysettings.settings_of(text, SETTINGS_TRIGGERS, forked_seen) == pysettings.settings_of(text, SETTINGS_TRIGGERS)


def test_a_text_that_does_not_parse_leaves_no_pass_either_way(small_chunks, monkeypatch):
    text = BIG + "broken = (\n"
    assert _in_process(text, _rules()) == (None, None)
    assert forked.narrow(text, _rules(), SETTINGS_TRIGGERS) == (None, None)


def test_a_child_that_fails_leaves_the_work_to_this_process(small_chunks, monkeypatch):
    def broken(text, rules):
        raise RecursionError("too deep for the child")

    monkeypatch.setattr(forked, "_narrowed", broken)
    started = _forks(monkeypatch)
    assert forked.narrow(BIG, _rules(), SETTINGS_TRIGGERS) is None
    assert len(started) == 2
    for pid in started:  # every child was waited for
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _outcomes(paths: list[tuple[str, str]]) -> list:
    checker = Checker(resolve_target("sm61"), Options())
    out = []
    for path, language in paths:
        result = checker.check_source(decode(path, read_bytes(path), language), language)
        out.append((path, result.error, [(f.code, f.location, f.message, f.fix) for f in result.findings]))
    return out


def test_a_scan_gives_the_same_findings_with_the_passes_forked(small_chunks, monkeypatch, tmp_path):
    big = tmp_path / "big.py"
    big.write_text(BIG)
    files = [(str(big), "python"), *(f for f in _fixture_files() if f[1] == "python")]
    here = _outcomes(files)
    monkeypatch.setattr(forked, "libcst_loaded", lambda: False)  # this test process has it loaded
    monkeypatch.setattr(forked, "_idle_cpus", lambda: 2)
    started = _forks(monkeypatch)
    assert _outcomes(files) == here
    assert started and any(findings for _, _, findings in here)


def test_nothing_is_forked_where_it_cannot_help(small_chunks, monkeypatch):
    text = BIG
    monkeypatch.setattr(forked, "_idle_cpus", lambda: 2)
    assert forked.libcst_loaded()  # the tests load LibCST: a tree scan's workers have it loaded too
    assert not forked.worth_forking(text)
    monkeypatch.setattr(forked, "libcst_loaded", lambda: False)
    assert forked.worth_forking(text)
    assert not forked.worth_forking(text[:3_000])  # short: not even read in chunks
    monkeypatch.setattr(forked, "_idle_cpus", lambda: 1.2)  # the machine is busy: the children would wait for a CPU
    assert not forked.worth_forking(text)
    monkeypatch.setattr(forked, "_idle_cpus", lambda: 2)
    monkeypatch.setenv("RLCOMPAT_PLAIN_LIBCST", "1")
    assert not forked.worth_forking(text)
    monkeypatch.delenv("RLCOMPAT_PLAIN_LIBCST")
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert not forked.worth_forking(text)  # a fork copies no thread but this one: never with others running
    finally:
        stop.set()
        worker.join()
    assert forked.worth_forking(text)


def test_idle_cpus_are_the_cpus_less_the_load(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(os, "getloadavg", lambda: (1.25, 9.0, 9.0))
    assert forked._idle_cpus() == 2.75
