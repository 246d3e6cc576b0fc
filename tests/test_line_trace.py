"""`verify --trainer --trace`'s line watch: which findings' statements ran, in any thread, with either mechanism."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlcompat.findings import Finding, Location
from rlcompat.verify import line_trace

TARGET = textwrap.dedent('''\
    DTYPE = "bfloat16"


    def used():
        x = dict(
            attn="flash_attention_2",
        )
        return x


    def unused():
        return "bfloat16"


    def in_thread():
        return "flash_attention_2"


    @staticmethod
    def decorated():
        return 1
''')

RUN = textwrap.dedent('''\
    import importlib.util, sys, threading
    from rlcompat.verify import line_trace
    line_trace.install(sys.argv[1], sys.argv[2], monitoring={monitoring})
    spec = importlib.util.spec_from_file_location("tgt", sys.argv[3])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.used()
    t = threading.Thread(target=module.in_thread)
    t.start(); t.join()
''')


def _finding(code, path, line):
    return Finding(code=code, name="n", message="m", path=str(path), location=Location(line, 1, line, 2), target="sm61")


MECHANISMS = [False] + ([True] if hasattr(sys, "monitoring") else [])


@pytest.mark.parametrize("monitoring", MECHANISMS, ids=lambda m: "sys.monitoring" if m else "settrace")
def test_reached_means_a_line_of_the_findings_statement_ran(tmp_path, monitoring):
    target = tmp_path / "tgt.py"
    target.write_text(TARGET)
    config = tmp_path / "run.yaml"
    config.write_text("dtype: bfloat16\n")
    findings = [_finding("RLC102", target, 1),   # module level: runs at import
                _finding("RLC201", target, 6),   # inside a multi-line call that runs
                _finding("RLC102", target, 12),  # a function nobody calls
                _finding("RLC201", target, 16),  # runs in another thread
                _finding("RLC999", target, 19),  # a decorator line: runs when the def runs
                _finding("RLC104", config, 1)]   # a config: read, not executed
    points, untraceable = line_trace.watch_points(findings)
    out = tmp_path / "trace"
    out.mkdir()
    line_trace.write_spec(points, out / "watch.json")
    script = tmp_path / "run.py"
    script.write_text(RUN.format(monitoring=monitoring))
    subprocess.run([sys.executable, str(script), str(out / "watch.json"), str(out), str(target)], check=True,
                   cwd=Path(__file__).resolve().parents[1])
    result = line_trace.classify(points, untraceable, line_trace.read_hits(out), tmp_path)
    assert [r["location"] for r in result["reached"]] == ["tgt.py:1", "tgt.py:6", "tgt.py:16", "tgt.py:19"]
    # module level and a decorator run at import; the call's argument and the thread's return ran in a function
    assert [r["at_import"] for r in result["reached"]] == [True, False, False, True]
    assert [r["location"] for r in result["not_reached"]] == ["tgt.py:12"]
    assert [r["location"] for r in result["not_traceable"]] == ["run.yaml:1"]


def test_a_compound_statement_is_watched_at_its_header_only(tmp_path):
    target = tmp_path / "t.py"
    target.write_text("def f(a=1,\n      b=2):\n    return a\n")
    points, _ = line_trace.watch_points([_finding("RLC1", target, 2)])
    assert points[0].lines == (1, 2) and points[0].at_import  # the def's header (defaults run at import)


def test_a_class_body_default_runs_at_import_a_method_body_does_not(tmp_path):
    target = tmp_path / "c.py"
    target.write_text("class C:\n    dtype: str = 'bfloat16'\n\n    def f(self):\n        return 'bfloat16'\n")
    points, _ = line_trace.watch_points([_finding("RLC1", target, 2), _finding("RLC1", target, 5)])
    assert [(p.lines, p.at_import) for p in points] == [((2,), True), ((5,), False)]


def test_findings_before_the_fix_are_watched_where_the_fix_put_their_code(tmp_path):
    before, after = tmp_path / "before" / "pkg", tmp_path / "after" / "pkg"
    before.mkdir(parents=True)
    after.mkdir(parents=True)
    (before / "m.py").write_text("import torch\n\nDTYPE = torch.bfloat16\n\n\ndef f():\n    return 'flash_attention_2'\n")
    # the fix rewrote line 3 and a line was added above line 7
    (after / "m.py").write_text("import torch\n\nDTYPE = torch.float32\n\n\ndef f():\n    x = 1\n    return 'sdpa'\n")
    (before / "gone.py").write_text("A = 'bfloat16'\n")
    findings = [_finding("RLC101", before / "m.py", 3), _finding("RLC201", before / "m.py", 7),
                _finding("RLC102", before / "gone.py", 1)]
    points, _ = line_trace.watch_points(findings)
    moved, lost = line_trace.mapped_onto(points, before, after)
    assert [(p.path, p.lines, p.shown) for p in moved] == [
        (str((after / "m.py").resolve()), (3,), "m.py:3"),
        (str((after / "m.py").resolve()), (7, 8), "m.py:7")]
    assert [p.shown or p.path for p in lost] == [str((before / "gone.py").resolve())]
    hits = {(str((after / "m.py").resolve()), 8)}
    result = line_trace.classify(moved, lost, hits, tmp_path)
    assert [r["location"] for r in result["reached"]] == ["m.py:7"]
    assert [r["location"] for r in result["not_reached"]] == ["m.py:3"]
    assert [r["location"] for r in result["not_traceable"]] == ["before/pkg/gone.py:1"]
