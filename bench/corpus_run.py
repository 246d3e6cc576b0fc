"""Corpus runs: scan and fix every Python, YAML and shell file of large real packages for old GPUs, and check
that nothing breaks.

    nice -n 10 .venv/bin/python bench/corpus_run.py                      # all packages, sm61/sm70/sm75, safe+unsafe
    nice -n 10 .venv/bin/python bench/corpus_run.py --packages verl --targets sm61 --modes unsafe
    nice -n 10 .venv/bin/python bench/corpus_run.py --write docs/robustness.md

Packages: verl, transformers and torch are copied from the running interpreter's site-packages (this repo's .venv);
accelerate, peft and datasets are the newest wheels from `pip download --no-deps`, cached in bench/.corpus/ and
unzipped there. Every run works on a fresh copy in a temporary directory: nothing outside it is written.

For each package, target and mode (safe fixes only, or with --unsafe-fixes), every file is scanned and fixed in
process through rlcompat's library (`Checker`, `fixer.fix_file`, the same calls `fix_paths` makes per file, one
file at a time so an exception is pinned to its file), and each file that `fix` changed is checked:

1. written: the bytes on disk are the fixed text in the file's own encoding, BOM and line endings.
2. replay: the reported fixes, applied by this script to the original text pass by pass (each pass's findings must
   be reported by a scan of the text of that pass, and their edits must not overlap), give exactly the written
   text. So every changed character lies inside a reported edit.
3. Python: the fixed text compiles (`compile()`); its AST equals the original's except in nodes that overlap a fix
   site (see `ast_differences`): positions are ignored, and each smallest differing node, in the original and in
   the fixed tree, must overlap the same fix site.
   YAML: the fixed text still loads (ruamel.yaml, typ="safe"); the loaded data equals the original's except at
   paths whose key or value lies on a line of a fix site, in the original and in the fixed file.
   shell: `bash -n` accepts the fixed script if it accepted the original.
4. idempotent: a second `fix` of the written file changes nothing and applies nothing.

A crash is any exception out of rlcompat (including `FixBroke`, a fix that would not parse). With --cli, each
package/target/mode is also fixed by the real CLI (`rlcompat fix --output-format json`) on a second copy: its exit
code must not be 2 and the tree it leaves must equal the in-process one, file for file.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / "bench" / ".corpus"
SITE_PACKAGES = ("verl", "transformers", "torch")
DOWNLOADED = ("accelerate", "peft", "datasets")
ALL_PACKAGES = SITE_PACKAGES + DOWNLOADED
TARGETS = ("sm61", "sm70", "sm75")
MODES = ("safe", "unsafe")
START, END = "<!-- corpus:start -->", "<!-- corpus:end -->"
SECTION = "## Corpus runs"
# Copied with the package: the files rlcompat checks, plus what rules read around them (verl/version/version).
COPY_SUFFIXES = {".py", ".pyi", ".yaml", ".yml", ".sh", ".bash", ".toml", ".json", ".txt", ".cfg", ".ini", ""}

sys.path.insert(0, str(REPO))

from rlcompat.config import Options  # noqa: E402
from rlcompat.pipeline.discovery import discover  # noqa: E402
from rlcompat.pipeline.runner import Checker  # noqa: E402
from rlcompat.pipeline.fixer import FixBroke, apply_edits, fix_file  # noqa: E402
from rlcompat.pipeline.source import SourceError, SourceFile, decode, encode, read, read_bytes  # noqa: E402
from rlcompat.knowledge.targets import resolve_target  # noqa: E402
from rlcompat.lang.textpos import LineIndex  # noqa: E402

SETTINGS = Options(cache_dir=None)


# --- getting the sources -----------------------------------------------------------------------------------------

def package_source(name: str, refresh: bool = False) -> tuple[Path, str]:
    """The directory of a package's sources and its version."""
    if name in SITE_PACKAGES:
        spec = importlib.util.find_spec(name)  # finds the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"{name} is not installed in {sys.prefix}")
        from importlib import metadata

        return Path(list(spec.submodule_search_locations)[0]), metadata.version(name)
    wheels = CACHE / "wheels"
    found = sorted(wheels.glob(f"{name}-*.whl")) if wheels.exists() else []
    if refresh or not found:
        wheels.mkdir(parents=True, exist_ok=True)
        for old in found:
            old.unlink()
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                        "-d", str(wheels), name], check=True)
        found = sorted(wheels.glob(f"{name}-*.whl"))
    wheel = found[-1]
    version = wheel.name.split("-")[1]
    unpacked = CACHE / "src" / f"{name}-{version}"
    if not (unpacked / name).is_dir():
        shutil.rmtree(unpacked, ignore_errors=True)
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(unpacked)
    return unpacked / name, version


def copy_tree(src: Path, dest: Path) -> None:
    def ignore(directory, names):
        return [n for n in names if n == "__pycache__" or (
            os.path.isfile(os.path.join(directory, n)) and os.path.splitext(n)[1].lower() not in COPY_SUFFIXES)]

    shutil.copytree(src, dest, ignore=ignore, symlinks=True)


# --- positions ---------------------------------------------------------------------------------------------------

class Lines(LineIndex):
    """rlcompat's line index (\\r\\n, \\r and \\n end a line, as for Python and YAML), plus `ast`'s byte columns."""

    def byte_offset(self, lineno: int, col_bytes: int) -> int:
        """1-based line, UTF-8 byte column (as in `ast`) -> character offset."""
        if lineno > len(self.starts):
            return len(self.text)
        start = self.starts[lineno - 1]
        line = self.text[start:start + col_bytes]  # at least col_bytes bytes, unless the line is shorter
        if line.isascii():
            return start + col_bytes
        return start + len(line.encode("utf-8")[:col_bytes].decode("utf-8", "ignore"))

    def line_of(self, offset: int) -> int:
        """0-based line of a character offset."""
        return self.position(offset)[0] - 1


@dataclass
class Site:
    """One fix site: [o_start, o_end) in the original text, [c_start, c_end) in the current (finally the fixed) text."""

    o_start: int
    o_end: int
    c_start: int
    c_end: int


class SiteMap:
    """Fix sites across passes: edits of a later pass are mapped back to the original text through earlier ones."""

    def __init__(self) -> None:
        self.sites: list[Site] = []

    def to_original(self, pos: int, side: str) -> int:
        last = None
        for s in self.sites:
            if s.c_start <= pos <= s.c_end:
                return s.o_start if side == "start" else s.o_end
            if s.c_end < pos:
                last = s
        return pos - (last.c_end - last.o_end) if last else pos

    def apply(self, edits) -> None:
        items = [(s.c_start, s.c_end, s.o_start, s.o_end, 0) for s in self.sites]
        items += [(e.start, e.end, self.to_original(e.start, "start"), self.to_original(e.end, "end"),
                   len(e.content) - (e.end - e.start)) for e in edits]
        items.sort(key=lambda t: (t[0], t[1]))
        groups: list[list] = []
        for c_s, c_e, o_s, o_e, growth in items:
            if groups and c_s <= groups[-1][1]:
                g = groups[-1]
                g[1], g[2], g[3], g[4] = max(g[1], c_e), min(g[2], o_s), max(g[3], o_e), g[4] + growth
            else:
                groups.append([c_s, c_e, o_s, o_e, growth])
        shift, out = 0, []
        for c_s, c_e, o_s, o_e, growth in groups:
            out.append(Site(o_s, o_e, c_s + shift, c_e + shift + growth))
            shift += growth
        self.sites = out


# --- the checks --------------------------------------------------------------------------------------------------

def _with_text(source: SourceFile, text: str) -> SourceFile:
    return SourceFile(source.path, text, source.encoding, source.bom, source.raw)


def replay(checker: Checker, source: SourceFile, language: str, applied, first_scan) -> tuple[str | None, SiteMap, str | None]:
    """Apply the reported fixes to the original text, pass by pass. Returns (text, sites, problem)."""
    text, sites, i = source.text, SiteMap(), 0
    while i < len(applied):
        scan = first_scan if i == 0 else checker.check_source(_with_text(source, text), language)
        reported = set(scan.findings)
        j = i
        while j < len(applied) and applied[j] in reported:
            j += 1
        if j == i:
            f = applied[i]
            return None, sites, f"applied {f.code} at {f.location.line}:{f.location.column} was not reported by a scan of the text it was applied to"
        edits = sorted(e for f in applied[i:j] for e in f.fix.edits)
        new_text, chosen = apply_edits(text, edits)
        if len(chosen) != len(edits):
            return None, sites, "the applied fixes of one pass have overlapping edits"
        sites.apply(edits)
        text, i = new_text, j
    return text, sites, None


def _span(node, lines: Lines) -> tuple[int, int]:
    if node is None:  # the module itself
        return 0, len(lines.text)
    return lines.byte_offset(node.lineno, node.col_offset), lines.byte_offset(node.end_lineno, node.end_col_offset)


def _located(node, ancestor):
    return node if isinstance(node, ast.AST) and getattr(node, "end_lineno", None) is not None else ancestor


def _same_leaf(a, b) -> bool:
    return type(a) is type(b) and (a == b or repr(a) == repr(b))  # 1 == 1.0 == True, nan != nan


def ast_differences(a, b, loc_a=None, loc_b=None, out=None) -> list[tuple[list, list]]:
    """The smallest differing parts of two ASTs, positions ignored: (located nodes of a, located nodes of b).

    A differing field reports its nearest located node (one with line/column, e.g. the `Constant` whose value
    changed). Lists of different lengths are aligned on `ast.dump`, and each unmatched element is reported itself.
    """
    out = [] if out is None else out
    if type(a) is not type(b):
        out.append(([_located(a, loc_a)], [_located(b, loc_b)]))
    elif isinstance(a, ast.AST):
        la, lb = _located(a, loc_a), _located(b, loc_b)
        for name in a._fields:
            ast_differences(getattr(a, name, None), getattr(b, name, None), la, lb, out)
    elif isinstance(a, list):
        if len(a) == len(b):
            for x, y in zip(a, b):
                ast_differences(x, y, loc_a, loc_b, out)
        else:
            da = [ast.dump(x) if isinstance(x, ast.AST) else repr(x) for x in a]
            db = [ast.dump(y) if isinstance(y, ast.AST) else repr(y) for y in b]
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, da, db, autojunk=False).get_opcodes():
                if tag == "equal":
                    continue
                if tag == "replace" and i2 - i1 == j2 - j1:
                    for x, y in zip(a[i1:i2], b[j1:j2]):
                        ast_differences(x, y, loc_a, loc_b, out)
                else:
                    out.append(([_located(x, loc_a) for x in a[i1:i2]] or [loc_a],
                                [_located(y, loc_b) for y in b[j1:j2]] or [loc_b]))
    elif not _same_leaf(a, b):
        out.append(([loc_a], [loc_b]))
    return out


def _overlaps(span: tuple[int, int], start: int, end: int) -> bool:
    return span[0] <= end and start <= span[1]


def check_python(original: str, fixed: str, sites: SiteMap, path: str) -> list[str]:
    problems = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree_a = compile(original, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            compile(tree_a, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return []  # not Python this interpreter compiles (Python 2, a template, newer syntax): nothing to compare
        try:
            tree_b = compile(fixed, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            compile(tree_b, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            return [f"noncompiling: {type(exc).__name__}: {exc}"]
    la, lb = Lines(original), Lines(fixed)
    for nodes_a, nodes_b in ast_differences(tree_a, tree_b):
        spans_a = [_span(n, la) for n in nodes_a]
        spans_b = [_span(n, lb) for n in nodes_b]
        ok = any(all(_overlaps(sa, s.o_start, s.o_end) for sa in spans_a)
                 and all(_overlaps(sb, s.c_start, s.c_end) for sb in spans_b) for s in sites.sites)
        if not ok:
            where_a = next((n for n in nodes_a if n is not None), None)
            where_b = next((n for n in nodes_b if n is not None), None)
            where = f"original line {where_a.lineno}" if where_a else f"fixed line {where_b.lineno}" if where_b else "module"
            kind = type(where_a or where_b).__name__
            problems.append(f"nonlocal-ast: the AST changed at {where} ({kind}), outside every fix site")
    return problems


def _yaml_load(text: str, typ: str):
    from ruamel.yaml import YAML

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(YAML(typ=typ, pure=True).load_all(text))


def _data_differences(a, b, path: tuple, out: list) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append(path + (k,))
            else:
                _data_differences(a[k], b[k], path + (k,), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _data_differences(x, y, path + (i,), out)
    elif not (type(a) is type(b) and (a == b or repr(a) == repr(b))):
        out.append(path)


def _yaml_lines(docs, path: tuple) -> tuple[int, int] | None:
    """0-based line range of a data path's key and value in round-trip-loaded documents; None: the whole file."""
    node, found = docs[path[0]], None
    for key in path[1:]:
        lc = getattr(node, "lc", None)
        try:
            if isinstance(node, dict):
                kl, vl = lc.key(key)[0], lc.value(key)[0]
                found, node = (min(kl, vl), max(kl, vl)), node[key]
            elif isinstance(node, list):
                found, node = (lc.item(key)[0],) * 2, node[key]
            else:
                break
        except (KeyError, IndexError, TypeError, AttributeError):
            break
    return found


def check_yaml(original: str, fixed: str, sites: SiteMap) -> list[str]:
    try:
        data_a = _yaml_load(original, "safe")
        typ = "safe"
    except Exception:
        try:
            data_a, typ = _yaml_load(original, "rt"), "rt"  # custom tags: compare what the round-trip loader gives
        except Exception:
            return []
    try:
        data_b = _yaml_load(fixed, typ)
    except Exception as exc:
        return [f"yaml-unloadable: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"]
    diffs: list[tuple] = []
    if len(data_a) != len(data_b):
        return ["nonlocal-yaml: the number of documents changed"]
    for i, (x, y) in enumerate(zip(data_a, data_b)):
        _data_differences(x, y, (i,), diffs)
    if not diffs:
        return []
    rt_a, rt_b = _yaml_load(original, "rt"), _yaml_load(fixed, "rt")
    la, lb = Lines(original), Lines(fixed)
    problems = []
    for path in diffs:
        ra, rb = _yaml_lines(rt_a, path), _yaml_lines(rt_b, path)
        ok = False
        for s in sites.sites:
            sa = (la.line_of(s.o_start), la.line_of(s.o_end))
            sb = (lb.line_of(s.c_start), lb.line_of(s.c_end))
            if (ra is None or _overlaps(ra, *sa)) and (rb is None or _overlaps(rb, *sb)):
                ok = True
                break
        if not ok or ra is None or rb is None:
            problems.append(f"nonlocal-yaml: {'.'.join(map(str, path[1:])) or '<document>'} changed outside every fix site")
    return problems


def check_shell(original: str, fixed: str) -> list[str]:
    def ok(text: str) -> bool:
        return subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True).returncode == 0

    return [] if not ok(original) or ok(fixed) else ["noncompiling: bash -n rejects the fixed script"]


# --- one file ----------------------------------------------------------------------------------------------------

_checkers: dict[str, Checker] = {}


def _checker(target: str) -> Checker:
    if target not in _checkers:
        _checkers[target] = Checker(resolve_target(target), SETTINGS)
    return _checkers[target]


def check_one(task: tuple[str, str, str, str, bool]) -> dict:
    root, rel, language, target, unsafe = task
    path = os.path.join(root, rel)
    rec = {"path": rel, "language": language, "findings": 0, "fixable": 0, "applied": 0, "remaining": 0,
           "changed": False, "error": None, "crash": None, "problems": [], "seconds": 0.0}
    t0 = time.perf_counter()
    try:
        checker = _checker(target)
        try:
            source = read(path, language)
        except SourceError as exc:
            rec["error"] = str(exc)
            return rec
        # fix_file's first check is the scan of the original: for a file it leaves unchanged, what remains is
        # exactly what a scan finds; for a changed file, replay() scans the original again (its first pass).
        outcome = fix_file(checker, path, language, unsafe=unsafe, write=True)
        scan = outcome.remaining
        if getattr(outcome, "broken", False):  # a fix that would not parse: fix_file spared the file (a rule bug)
            rec["crash"] = f"FixBroke: {outcome.error.one_line() if outcome.error else ''}"
        elif outcome.error:
            rec["problems"].append(f"fix-error: {outcome.error.one_line()}")
        rec["applied"] = len(outcome.applied)
        rec["applied_codes"] = sorted(f.code for f in outcome.applied)
        rec["remaining"] = len(outcome.remaining.findings) if outcome.remaining else 0
        rec["changed"] = outcome.changed
        if outcome.changed:
            scan, problems = verify(checker, source, outcome, language, unsafe, path)
            rec["problems"] += problems
        if scan is not None:
            if scan.error:
                rec["error"] = scan.error.one_line()
            rec["findings"] = len(scan.findings)
            rec["fixable"] = sum(1 for f in scan.findings if f.fix is not None and f.fix.applies(unsafe))
    except FixBroke as exc:
        rec["crash"] = f"FixBroke: {exc}"
    except Exception:  # RecursionError included
        rec["crash"] = traceback.format_exc(limit=-6)
    rec["seconds"] = time.perf_counter() - t0
    return rec


def verify(checker: Checker, source: SourceFile, outcome, language: str, unsafe: bool, path: str):
    """The checks of a changed file; returns (the scan of the original, problems)."""
    problems = []
    written = read_bytes(path)
    if written != encode(source, outcome.fixed):
        problems.append("written: the bytes on disk are not the fixed text in the file's encoding")
    else:
        again = decode(path, written, language)
        if (again.encoding, again.bom) != (source.encoding, source.bom):
            problems.append("written: encoding or BOM changed")
    original_scan = checker.check_source(source, language)
    text, sites, why = replay(checker, source, language, outcome.applied, original_scan)
    if why:
        problems.append(f"replay: {why}")
    elif text != outcome.fixed:
        problems.append("replay: the reported edits applied to the original do not give the written text")
    if language == "python":
        problems += check_python(source.text, outcome.fixed, sites, path)
    elif language == "yaml":
        problems += check_yaml(source.text, outcome.fixed, sites)
    elif language == "shell":
        problems += check_shell(source.text, outcome.fixed)
    second = fix_file(checker, path, language, unsafe=unsafe, write=False)
    if second.changed or second.applied:
        problems.append(f"nonidempotent: a second fix applies {', '.join(sorted({f.code for f in second.applied}))}")
    return original_scan, problems


# --- narrowed against whole-file parsing ---------------------------------------------------------------------------

def _result_key(result) -> tuple:
    return (result.error and (result.error.message, result.error.line, result.error.column),
            [(f.code, f.location, f.message, f.fix, f.source_line, f.severity) for f in result.findings])


def narrowing_differences(task: tuple[str, str, str]) -> tuple[str, bool, str | None]:
    """One file checked twice, with the Python front end's narrowing (lang/pyspeed/narrow.py) and with the whole file
    parsed: (path, parsed, None if the findings, positions, messages and fix edits are identical, else why)."""
    path, language, target = task
    import rlcompat.lang.python as python_frontend

    checker = _checker(target)
    try:
        source = read(path, language)
    except SourceError:
        return path, False, None
    narrowed = checker.check_source(source, language)
    real = python_frontend.narrow
    python_frontend.narrow = lambda text, rules: None
    try:
        whole = checker.check_source(source, language)
    finally:
        python_frontend.narrow = real
    a, b = _result_key(narrowed), _result_key(whole)
    return path, narrowed.parsed, None if a == b else f"narrowed {a} != whole {b}"


def compare_narrowing(root: Path, target: str, pool=None) -> tuple[int, int, list[str]]:
    """(files, files parsed, differences) over every Python file under `root`."""
    files, _ = discover([str(root)], SETTINGS)
    tasks = [(p, lang, target) for p, lang in files if lang == "python"]
    results = list(pool.map(narrowing_differences, tasks, chunksize=4) if pool else map(narrowing_differences, tasks))
    return len(tasks), sum(1 for _, parsed, _ in results if parsed), [f"{p}: {why}" for p, _, why in results if why]


# --- a package run -----------------------------------------------------------------------------------------------

@dataclass
class Run:
    package: str
    version: str
    target: str
    mode: str
    files: int = 0
    by_language: dict = field(default_factory=dict)
    findings: int = 0
    fixable: int = 0
    applied: int = 0
    remaining: int = 0
    changed: int = 0
    errors: list = field(default_factory=list)  # files rlcompat could not read or parse (reported, not crashes)
    crashes: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # (path, problem)
    codes: dict = field(default_factory=dict)
    seconds: float = 0.0
    slowest: tuple = ("", 0.0)
    cli: str = "not run"

    def count(self, kind: str) -> int:
        return sum(1 for _, p in self.problems if p.startswith(kind))


def run_package(package: str, source_dir: Path, version: str, target: str, mode: str, pool, workdir: Path,
                cli: bool = False) -> Run:
    run = Run(package, version, target, mode)
    root = workdir / f"{package}-{target}-{mode}" / package
    copy_tree(source_dir, root)
    files, _ = discover([str(root)], SETTINGS)
    run.files = len(files)
    for _, lang in files:
        run.by_language[lang] = run.by_language.get(lang, 0) + 1
    t0 = time.perf_counter()
    tasks = [(str(root), os.path.relpath(p, root), lang, target, mode == "unsafe") for p, lang in files]
    results = pool.map(check_one, tasks, chunksize=8) if pool else map(check_one, tasks)
    for rec in results:
        run.findings += rec["findings"]
        run.fixable += rec["fixable"]
        run.applied += rec["applied"]
        run.remaining += rec["remaining"]
        run.changed += rec["changed"]
        for code in rec.get("applied_codes", ()):
            run.codes[code] = run.codes.get(code, 0) + 1
        if rec["error"]:
            run.errors.append((rec["path"], rec["error"]))
        if rec["crash"]:
            run.crashes.append((rec["path"], rec["crash"]))
        run.problems += [(rec["path"], p) for p in rec["problems"]]
        if rec["seconds"] > run.slowest[1]:
            run.slowest = (rec["path"], rec["seconds"])
    run.seconds = time.perf_counter() - t0
    if cli:
        run.cli = cli_check(root, source_dir, target, mode, workdir / f"{package}-{target}-{mode}-cli" / package, run)
    return run


def cli_check(fixed_root: Path, source_dir: Path, target: str, mode: str, cli_root: Path, run: Run) -> str:
    """Fix a second copy with the real CLI; it must not fail (exit 2) and must leave the same tree."""
    copy_tree(source_dir, cli_root)
    cmd = [sys.executable, "-m", "rlcompat", "fix", str(cli_root), "--target", target, "--output-format", "json",
           "--no-cache"] + (["--unsafe-fixes"] if mode == "unsafe" else [])
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cli_root.parent, env=env)  # this checkout's rlcompat
    if proc.returncode not in (0, 1):
        run.crashes.append(("<cli>", f"exit {proc.returncode}: {proc.stderr.strip()[-2000:]}"))
        return f"exit {proc.returncode}"
    doc = json.loads(proc.stdout)
    differ = []
    for path, _ in discover([str(fixed_root)], SETTINGS)[0]:
        rel = os.path.relpath(path, fixed_root)
        if read_bytes(path) != read_bytes(str(cli_root / rel)):
            differ.append(rel)
    if differ:
        run.problems += [(rel, "cli: the CLI left a different file") for rel in differ]
    fixed, remaining = doc["summary"]["fixed"], doc["summary"]["findings"]
    same = not differ and fixed == run.applied and remaining == run.remaining
    return f"exit {proc.returncode}, same tree" if same else (
        f"exit {proc.returncode}, {len(differ)} files differ, fixed {fixed} vs {run.applied}, remaining {remaining} vs {run.remaining}")


# --- reporting ---------------------------------------------------------------------------------------------------

COLUMNS = ("package", "target", "mode", "files (py/yaml/sh)", "findings", "fixes applied", "remaining", "files changed",
           "unparsed", "crashes", "non-compiling", "non-local", "non-idempotent", "seconds")


def row(run: Run) -> list[str]:
    langs = "/".join(str(run.by_language.get(k, 0)) for k in ("python", "yaml", "shell"))
    nonlocal_ = run.count("replay") + run.count("nonlocal") + run.count("written") + run.count("cli")
    return [f"{run.package} {run.version}", run.target, run.mode, f"{run.files} ({langs})", str(run.findings),
            str(run.applied), str(run.remaining), str(run.changed), str(len(run.errors)), str(len(run.crashes)),
            str(run.count("noncompiling") + run.count("yaml-unloadable")), str(nonlocal_),
            str(run.count("nonidempotent")), f"{run.seconds:.1f}"]


def markdown_table(runs: list[Run]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(row(r)) + " |" for r in runs]
    return "\n".join(lines)


def text_table(runs: list[Run]) -> str:
    rows = [list(COLUMNS)] + [row(r) for r in runs]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows)


def details(runs: list[Run]) -> str:
    out = []
    for r in runs:
        for path, crash in r.crashes:
            out.append(f"- CRASH {r.package} {r.target} {r.mode} `{path}`: {crash.strip().splitlines()[-1]}")
        for path, problem in r.problems:
            out.append(f"- {r.package} {r.target} {r.mode} `{path}`: {problem}")
    unparsed = {}
    for r in runs:
        for path, err in r.errors:
            unparsed.setdefault((r.package, path), err)
    for (pkg, path), err in sorted(unparsed.items()):
        out.append(f"- not parsed (reported as an error, not a crash): {pkg} `{path}`: {err.split(': ', 1)[-1]}")
    return "\n".join(out)


def _commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no", "rlcompat", "rules"],
                               capture_output=True, text=True).stdout.strip()
        return out.stdout.strip() + (" with uncommitted changes to rlcompat/ or rules/" if dirty else "") if out.returncode == 0 else "unknown"
    except OSError:
        return "unknown"


def section(runs: list[Run], wall: float, command: str, commit: str = "unknown") -> str:
    codes: dict[str, dict[str, int]] = {}
    for r in runs:
        if r.mode == "unsafe":
            for code, n in r.codes.items():
                codes.setdefault(r.package, {})[code] = codes.setdefault(r.package, {}).get(code, 0) + n
    rule_lines = [f"- {pkg}: " + ", ".join(f"{c} x{n}" for c, n in sorted(cs.items())) for pkg, cs in sorted(codes.items())]
    cli_lines = sorted({f"{r.cli}" for r in runs})
    if cli_lines and all(c.endswith(", same tree") for c in cli_lines):
        codes_seen = sorted({c.split(",")[0].split()[1] for c in cli_lines})
        cli_lines = [f"every run exited {' or '.join(codes_seen)} and left the same tree, byte for byte, with the same "
                     "fixed and remaining counts"]
    slow = max(runs, key=lambda r: r.slowest[1]).slowest if runs else ("", 0)
    return "\n".join([
        f"Generated by `{command}` (wall time {wall:.0f} s on {os.cpu_count()} cores, niced, shared machine; "
        f"Python {sys.version.split()[0]}; rlcompat at commit {commit}). Each package is copied to a temporary directory per target and mode, "
        "then every file is scanned and fixed through the library, one file at a time; see the docstring of "
        "[bench/corpus_run.py](../bench/corpus_run.py) for the checks.",
        "",
        markdown_table(runs),
        "",
        "- findings: all findings of a scan of the original files; fixes applied: findings whose fix `fix` applied "
        "(safe only, or also unsafe); remaining: findings left after fixing (no autofix, or unsafe in a safe run).",
        "- unparsed: files rlcompat reports as unreadable or unparsable (an error in the report, exit 1, never a crash).",
        "- non-compiling: a fixed Python file that `compile()` rejects, a fixed YAML file that no longer loads, or a "
        "script `bash -n` rejects. non-local: written bytes differ from the fixed text, the reported edits do not "
        "reproduce the written file, or the AST / loaded YAML changed outside a fix site; with the CLI check, a "
        "file the CLI fixed differently.",
        f"- CLI check (`rlcompat fix --output-format json` on a second copy): {'; '.join(cli_lines)}.",
        f"- slowest single file: `{slow[0]}` ({slow[1]:.1f} s for scan + fix + checks).",
        "",
        "Fixes applied per rule (unsafe runs, all targets):",
        "",
        *rule_lines,
        "",
        "Problems, crashes and unparsed files:",
        "",
        details(runs) or "- none",
    ])


def write_section(doc: Path, body: str) -> None:
    """Replace the text between the corpus markers; add the section at the end if missing. Reads the file right
    before writing, so sections other people edit in parallel are kept."""
    block = f"{START}\n{body}\n{END}"
    text = doc.read_text("utf-8") if doc.exists() else "# Robustness\n"
    if START in text and END in text:
        before, rest = text.split(START, 1)
        _, after = rest.split(END, 1)
        new = before + block + after
    else:
        new = text.rstrip("\n") + f"\n\n{SECTION}\n\n{block}\n"
    tmp = doc.with_suffix(".md.tmp")
    tmp.write_text(new, "utf-8")
    os.replace(tmp, doc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packages", default=",".join(ALL_PACKAGES))
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--modes", default=",".join(MODES), choices=["safe", "unsafe", "safe,unsafe", "unsafe,safe"],
                    help="safe, unsafe, or safe,unsafe (the default: both)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--cli", action="store_true", help="also fix a second copy with the CLI and compare the trees")
    ap.add_argument("--refresh", action="store_true", help="download the newest wheels again")
    ap.add_argument("--write", metavar="DOC", help="write the table into DOC between the corpus markers")
    ap.add_argument("--json", metavar="FILE", help="write every run's counts and problems as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copies (their path is printed)")
    ap.add_argument("--from-json", metavar="FILE", help="report a run saved with --json instead of running")
    ap.add_argument("--narrowing", action="store_true",
                    help="only compare narrowed with whole-file parsing (findings, positions, fixes) on every file")
    args = ap.parse_args(argv)
    if args.narrowing:
        return narrowing_main(args)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text("utf-8"))
        runs = [Run(**{k: tuple(v) if k == "slowest" else v for k, v in r.items()}) for r in saved["runs"]]
        print(text_table(runs))
        if args.write:
            write_section(Path(args.write), section(runs, saved["wall"], saved["command"], saved.get("commit", "unknown")))
            print(f"wrote {args.write}")
        return 0
    packages = [p for p in args.packages.split(",") if p]
    sources = {p: package_source(p, args.refresh) for p in packages}
    workdir = Path(tempfile.mkdtemp(prefix="rlcompat-corpus-"))
    runs: list[Run] = []
    t0 = time.perf_counter()
    import multiprocessing

    pool = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) if args.jobs > 1 else None
    try:
        for package in packages:
            src, version = sources[package]
            for target in args.targets.split(","):
                for mode in args.modes.split(","):
                    run = run_package(package, src, version, target, mode, pool, workdir, cli=args.cli)
                    runs.append(run)
                    print("  ".join(row(run)), f"cli: {run.cli}", flush=True)
                    for path, crash in run.crashes:
                        print(f"    CRASH {path}: {crash}", flush=True)
                    for path, problem in run.problems:
                        print(f"    {path}: {problem}", flush=True)
                    if not args.keep:
                        shutil.rmtree(workdir / f"{package}-{target}-{mode}", ignore_errors=True)
                        shutil.rmtree(workdir / f"{package}-{target}-{mode}-cli", ignore_errors=True)
    finally:
        if pool:
            pool.shutdown()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"copies kept in {workdir}")
    wall = time.perf_counter() - t0
    print()
    print(text_table(runs))
    print(f"\nwall time {wall:.1f} s")
    command = "nice -n 10 .venv/bin/python bench/corpus_run.py " + " ".join(a for a in (argv or sys.argv[1:]))
    if args.json:
        saved = {"wall": wall, "command": command.strip(), "commit": _commit(), "runs": [r.__dict__ for r in runs]}
        Path(args.json).write_text(json.dumps(saved, indent=1, default=str), "utf-8")
    if args.write:
        write_section(Path(args.write), section(runs, wall, command.strip(), _commit()))
        print(f"wrote {args.write}")
    bad = sum(len(r.crashes) + len(r.problems) for r in runs)
    return 1 if bad else 0


def narrowing_main(args) -> int:
    import multiprocessing

    pool = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) if args.jobs > 1 else None
    bad = 0
    try:
        for package in [p for p in args.packages.split(",") if p]:
            src, version = package_source(package, args.refresh)
            for target in args.targets.split(","):
                t0 = time.perf_counter()
                files, parsed, diffs = compare_narrowing(src, target, pool)
                bad += len(diffs)
                print(f"{package} {version} {target}: {files} Python files, {parsed} parsed, {len(diffs)} differing "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)
                for d in diffs:
                    print(f"    {d[:2000]}", flush=True)
    finally:
        if pool:
            pool.shutdown()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
