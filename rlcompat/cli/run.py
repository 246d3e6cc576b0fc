"""`--run LAUNCH.sh` of scan, fix and matrix: the run a launch script starts (rlcompat/analysis/run_model.py), the
paths it brings (the script and the verl package it runs) and fix's `--minimal`."""

from __future__ import annotations

import json
import os

from rlcompat.cli.common import fail


def run_of(script: str, text: str | None = None):
    """The Run of `script` (exit 2 with one line where it has none)."""
    from rlcompat.analysis.run_model import RunError, resolve
    from rlcompat.identity import Identities

    if not os.path.isfile(script):
        raise fail(f"{script}: --run takes a launch script (a file), and there is none there")
    try:
        return resolve(script, Identities.of_paths([script]).for_path(script), text)
    except RunError as exc:
        raise fail(str(exc))


def run_paths(paths, run) -> list[str]:
    """What `--run` checks: the paths given, the script and the package it runs, each once."""
    out: list[str] = []
    for p in [*(paths or ()), run.script, run.package]:
        if os.path.realpath(p) not in {os.path.realpath(o) for o in out}:
            out.append(p)
    return out


def trace_reader(path: str | None):
    """`executed(finding) -> bool | None` from a `verify --trace --output-format json` report (its `trace` lists:
    locations relative to the verified tree, or to the `--trace-from` tree), or None without one."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)["trace"]
        reached = {r["location"] for r in trace["reached"]}
        not_reached = {r["location"] for r in trace["not_reached"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise fail(f"{path}: not a `rlcompat verify --trainer --trace --output-format json` report ({exc}); write "
                   "one with that command and pass it to --trace")

    def executed(finding) -> bool | None:
        where = os.path.realpath(finding.path).replace(os.sep, "/")
        for locations, answer in ((reached, True), (not_reached, False)):
            if any(_same(where, finding.location.line, loc) for loc in locations):
                return answer
        return None

    return executed


def _same(path: str, line: int, location: str) -> bool:
    file, _, at = location.rpartition(":")
    return at.isdigit() and int(at) == line and (path == file or path.endswith("/" + file))


def skip_map(split) -> dict[str, frozenset]:
    """(line, column, code) of the findings a run does not reach, per file: what `fix --minimal` leaves alone."""
    out: dict[str, set] = {}
    for f, _ in split.not_reached:
        out.setdefault(os.path.realpath(f.path), set()).add((f.location.line, f.location.column, f.code))
    return {k: frozenset(v) for k, v in out.items()}
