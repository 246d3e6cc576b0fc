"""Which findings a run executes (`rlcompat verify --trainer --trace`): a line watch in every process of the run.

Before the run, verify scans the tree and turns each finding in a Python file into the lines of the statement that
holds it (`watch_points`); every process that imports verl installs the watch (`install`, from the verl plugin's
hooks) and appends each watched line the first time it runs to a per-process file. After the run, `classify` says
per finding: reached (a line of its statement ran in some process), not reached, or not traceable (a config or
script: read, not executed).

The watch costs little where nothing is watched: on Python 3.12+ `sys.monitoring` turns line events on only in the
code objects of watched files and switches each line off after its first event (PEP 669); before 3.12 a
`sys.settrace` function returns a line tracer only for frames of watched files. Nothing here imports torch or verl.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

TOOL_NAME = "rlcompat-trace"


@dataclass(frozen=True)
class WatchPoint:
    code: str
    path: str  # real path of the file
    line: int  # the finding's line
    lines: tuple[int, ...]  # the lines whose execution means the finding's code ran
    at_import: bool = False  # module or class-body code: it runs at import, whether or not its value is used
    shown: str = ""  # where the report names it, when not path:line (a finding of the tree before `fix`)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _statement_lines(tree: ast.AST, line: int) -> tuple[tuple[int, ...], bool]:
    """The lines of the innermost statement at `line` (for a compound statement, def, if, with, ..., only its
    header, since its body runs separately; a def's header runs at import: decorators and defaults), and whether
    that statement runs at import (no function body around it)."""
    best: ast.stmt | None = None
    in_function = False
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, inside = stack.pop()
        for child in ast.iter_child_nodes(node):
            if not (getattr(child, "lineno", line) <= line <= (getattr(child, "end_lineno", None) or line)):
                continue
            if isinstance(child, ast.stmt):
                header = isinstance(getattr(child, "body", None), list) and child.body and line < child.body[0].lineno
                if best is None or child.lineno >= best.lineno:
                    best, in_function = child, inside
                if header:
                    continue  # a line of the header: its body is not where the finding is
            stack.append((child, inside or isinstance(child, _FUNCTIONS)))
    if best is None:
        return (line,), True
    end = best.end_lineno or best.lineno
    body = getattr(best, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        end = max(best.lineno, body[0].lineno - 1)
    return tuple(range(best.lineno, end + 1)), not in_function


def watch_points(findings) -> tuple[list[WatchPoint], list]:
    """(watch points of the findings in Python files, the findings that cannot be traced)."""
    points: list[WatchPoint] = []
    untraceable = []
    trees: dict[str, ast.AST | None] = {}
    for f in findings:
        path = os.path.realpath(f.path)
        if not path.endswith(".py"):
            untraceable.append(f)
            continue
        if path not in trees:
            try:
                trees[path] = ast.parse(Path(path).read_text("utf-8", errors="replace"))
            except (OSError, SyntaxError, ValueError):
                trees[path] = None
        tree = trees[path]
        line = f.location.line
        lines, at_import = _statement_lines(tree, line) if tree is not None else ((line,), False)
        points.append(WatchPoint(f.code, path, line, lines, at_import))
    return points, untraceable


def mapped_onto(points: list[WatchPoint], original: Path, verified: Path) -> tuple[list[WatchPoint], list[WatchPoint]]:
    """Watch points of a finding in `original` (a tree before `fix`) moved onto the same file of `verified` (the tree
    after it), line by line through a diff of the two files; (moved, not found in the verified tree). A line the fix
    rewrote maps to the lines that replaced it, so "reached" means: the code the fix changed ran."""
    original, verified = Path(os.path.realpath(original)), Path(os.path.realpath(verified))
    moved, lost = [], []
    maps: dict[str, dict[int, tuple[int, ...]] | None] = {}
    for p in points:
        try:
            rel = Path(p.path).relative_to(original)
        except ValueError:
            lost.append(p)
            continue
        there = verified / rel
        if p.path not in maps:
            maps[p.path] = _line_map(Path(p.path), there) if there.is_file() else None
        line_map = maps[p.path]
        if line_map is None:
            lost.append(p)
            continue
        lines = tuple(sorted({n for old in p.lines for n in line_map.get(old, ())}))
        moved.append(WatchPoint(p.code, str(there), (line_map.get(p.line) or lines or (p.line,))[0],
                                lines or (p.line,), p.at_import, shown=f"{rel}:{p.line}"))
    return moved, lost


def _line_map(before: Path, after: Path) -> dict[int, tuple[int, ...]]:
    import difflib

    a = before.read_text("utf-8", errors="replace").splitlines()
    b = after.read_text("utf-8", errors="replace").splitlines()
    out: dict[int, tuple[int, ...]] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for k in range(i1, i2):
            if tag == "equal":
                out[k + 1] = (j1 + (k - i1) + 1,)
            else:  # replaced or deleted: the lines that stand there now (none for a pure deletion)
                out[k + 1] = tuple(range(j1 + 1, j2 + 1))
    return out


def write_spec(points: list[WatchPoint], spec: Path) -> None:
    by_file: dict[str, set[int]] = {}
    for p in points:
        by_file.setdefault(p.path, set()).update(p.lines)
    spec.write_text(json.dumps({k: sorted(v) for k, v in by_file.items()}), "utf-8")


class _Recorder:
    def __init__(self, watched: dict[str, frozenset[int]], out_dir: str):
        self.watched = watched
        self.out_dir = out_dir
        self.seen: set[tuple[str, int]] = set()
        self.lock = threading.Lock()
        self.real: dict[str, str | None] = {}  # co_filename -> watched real path, or None

    def file_of(self, filename: str) -> str | None:
        try:
            return self.real[filename]
        except KeyError:
            real = os.path.realpath(filename) if filename and not filename.startswith("<") else ""
            self.real[filename] = real if real in self.watched else None
            return self.real[filename]

    def hit(self, path: str, line: int) -> None:
        key = (path, line)
        if key in self.seen or line not in self.watched[path]:
            return
        with self.lock:
            if key in self.seen:
                return
            self.seen.add(key)
            out = os.path.join(self.out_dir, f"hits-{os.getpid()}.tsv")
            with open(out, "a", encoding="utf-8") as f:  # appended at once: a killed worker keeps its hits
                f.write(f"{path}\t{line}\n")


def install(spec_path: str, out_dir: str, monitoring: bool | None = None) -> None:
    """Start watching in this process (idempotent); hits go to out_dir/hits-<pid>.tsv. `monitoring`: use
    sys.monitoring (default: where the interpreter has it)."""
    if getattr(install, "_done", False):
        return
    install._done = True
    watched = {k: frozenset(v) for k, v in json.loads(Path(spec_path).read_text("utf-8")).items()}
    rec = _Recorder(watched, out_dir)
    if hasattr(sys, "monitoring") if monitoring is None else monitoring:
        _install_monitoring(rec)
    else:
        _install_settrace(rec)


def _install_monitoring(rec: _Recorder) -> None:
    mon = sys.monitoring
    tool = next((t for t in range(2, 6) if mon.get_tool(t) is None), None)  # 0, 1 and 5 are debuggers/profilers'
    if tool is None:
        _install_settrace(rec)
        return
    mon.use_tool_id(tool, TOOL_NAME)

    def on_start(code, offset):
        if rec.file_of(code.co_filename) is not None:
            mon.set_local_events(tool, code, mon.events.LINE)
        return mon.DISABLE  # each code object is looked at once

    def on_line(code, line):
        path = rec.file_of(code.co_filename)
        if path is not None:
            rec.hit(path, line)
        return mon.DISABLE  # this line's event, once is enough

    mon.register_callback(tool, mon.events.PY_START, on_start)
    mon.register_callback(tool, mon.events.LINE, on_line)
    mon.set_events(tool, mon.events.PY_START)


def _install_settrace(rec: _Recorder) -> None:
    def local(frame, event, arg):
        if event == "line":
            rec.hit(rec.file_of(frame.f_code.co_filename), frame.f_lineno)
        return local

    def global_trace(frame, event, arg):
        if event == "call" and rec.file_of(frame.f_code.co_filename) is not None:
            return local
        return None

    sys.settrace(global_trace)
    threading.settrace(global_trace)


def read_hits(folder: Path) -> set[tuple[str, int]]:
    hits: set[tuple[str, int]] = set()
    for f in folder.glob("hits-*.tsv"):
        for row in f.read_text("utf-8", errors="replace").splitlines():
            path, _, line = row.rpartition("\t")
            if line.isdigit():
                hits.add((path, int(line)))
    return hits


def classify(points: list[WatchPoint], untraceable: list, hits: set[tuple[str, int]], root: Path) -> dict:
    """verify's `trace` section: findings reached / not reached by the run, and those in files that do not run."""
    def where(path: str, line: int) -> str:
        try:
            return f"{Path(path).relative_to(root.resolve())}:{line}"
        except ValueError:
            return f"{path}:{line}"

    def place(x) -> tuple[str, int]:  # a Finding, or a WatchPoint that could not be moved
        return os.path.realpath(x.path), (x.location.line if hasattr(x, "location") else x.line)

    reached, not_reached = [], []
    for p in points:
        row = {"code": p.code, "location": p.shown or where(p.path, p.line), "at_import": p.at_import}
        (reached if any((p.path, n) in hits for n in p.lines) else not_reached).append(row)
    return {
        "reached": reached,
        "not_reached": not_reached,
        "not_traceable": [{"code": f.code, "location": where(*place(f))} for f in untraceable],
    }
