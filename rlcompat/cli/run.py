"""`--run LAUNCH.sh` or `--run "COMMAND"` of scan, fix and matrix: the run a launch script or a command line starts
(rlcompat/analysis/run_model.py), the paths it brings (the script, the config it composes, the verl package it runs),
and `fix --run [--minimal]` (`fix_run`)."""

from __future__ import annotations

import json
import os

import typer

from rlcompat.cli.common import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, OutputFormat, emit, emit_pieces, fail, failing


COMMAND_LABEL = "<command>"  # how findings in a command line given to --run are located: `<command>:1:40`


def run_of(spec: str, text: str | None = None):
    """The Run of `spec`: a launch script (a file), or a command line (words with spaces, as one argument); exit 2
    with one line where it has none."""
    from rlcompat.analysis.run_model import RunError, resolve
    from rlcompat.knowledge.identity import Identities

    command = not os.path.isfile(spec) and len(spec.split()) > 1
    if not command and not os.path.isfile(spec):
        raise fail(f"{spec}: --run takes a launch script (a file) or a command line in quotes "
                   "(\"python3 -m verl.trainer.main_ppo key=value ...\"), and this is neither")
    script = os.path.join(os.curdir, COMMAND_LABEL) if command else spec  # of the tree the command runs in
    try:
        return resolve(script, Identities.of_paths([script]).for_path(script), spec if command else text,
                       command=command)
    except RunError as exc:
        raise fail(str(exc))


def run_paths(paths, run) -> list[str]:
    """What `--run` checks: the paths given, the script, the user's configs it composes and the package it runs,
    each once (a command line is not a path: `run_scripts` gives it)."""
    out: list[str] = []
    for p in [*(paths or ()), *([] if run.command else [run.script]), *run.composed.files, run.package]:
        if os.path.realpath(p) not in {os.path.realpath(o) for o in out}:
            out.append(p)
    return out


def run_scripts(run) -> dict[str, str]:
    """The command line of a run given as one, by its label: checked as a launch script is."""
    return {run.script: run.command} if run.command else {}


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
    """(line, column, code) of the findings a run does not reach, per file: what `fix --minimal` leaves alone. A
    fallback's are fixed all the same: it runs whenever the call before it raises, and its fix is as safe."""
    from rlcompat.analysis.run_model import FALLBACK

    out: dict[str, set] = {}
    for f, why in split.not_reached:
        if why.reason == FALLBACK:
            continue
        out.setdefault(os.path.realpath(f.path), set()).add((f.location.line, f.location.column, f.code))
    return {k: frozenset(v) for k, v in out.items()}


def fix_run(run, paths, tgt, settings, *, diff: bool, output_format: OutputFormat, exit_zero: bool, jobs, use_cache: bool,
            minimal: bool, trace: str | None, color: bool) -> int:
    """`fix --run LAUNCH.sh [--minimal [--trace REPORT]]`, its exit code: the script first (its run is then judged
    with its fixed overrides: the rollout and precision keys `fix` writes there select code of the package), then
    the package, all of it or, with --minimal, only the findings the fixed script's run reaches. An installed verl is
    written through `fix --installed`'s pipeline (originals kept; `rlcompat restore verl` undoes it)."""
    from rlcompat.analysis.run_model import split
    from rlcompat.api import FixReport, fix_paths, scan_paths
    from rlcompat.pipeline.fixer import unified_diff
    from rlcompat.report.knowledge_summary import identity_json, identity_lines, knowledge_applied
    from rlcompat.report import Summary, render_pieces

    executed = trace_reader(trace)
    script = run.script
    everything = run_paths(paths, run)
    if run.command:  # a command line is fixed as text: the fixed command is printed, nothing is written for it
        first = fix_paths([], tgt, settings, write=False, jobs=jobs, use_cache=use_cache, scripts=run_scripts(run))
    else:
        first = fix_paths([script], tgt, settings, write=not diff, jobs=jobs, use_cache=use_cache)
    fixed_text = next((x.fixed for x in first.fixes if x.changed), None)
    if fixed_text is not None:
        run = run_of(fixed_text) if run.command else run_of(script, fixed_text)
    rest = [p for p in run_paths(paths, run) if os.path.realpath(p) != os.path.realpath(script)]
    skip = {}
    if minimal:
        scanned = scan_paths(rest, tgt, settings, jobs=jobs, use_cache=use_cache)
        skip = skip_map(split(run, scanned.findings, executed))
    parts, kept = [first], ""
    if _installed_verl(run.package):
        from rlcompat.installed.command import backup_line
        from rlcompat.installed.locate import InstalledError
        from rlcompat.installed.patch import fix_installed

        rest = [p for p in rest if os.path.realpath(p) != os.path.realpath(run.package)]
        try:
            installed, done = fix_installed("verl", tgt, settings, write=not diff, jobs=jobs, skip=skip)
        except InstalledError as exc:
            raise fail(str(exc))
        parts.append(installed)
        kept = backup_line(done) if not diff else ""
    if rest:
        parts.append(fix_paths(rest, tgt, settings, write=not diff, jobs=jobs, use_cache=use_cache, skip=skip))
    report = FixReport(tgt, [x for p in parts for x in p.fixes], [m for p in parts for m in p.missing],
                       [n for p in parts for n in p.not_read], parts[-1].identities)
    if report.missing:
        from rlcompat.pipeline.discovery import why_not_checked

        raise fail(f"{report.missing[0]}: {why_not_checked(report.missing[0])}")
    remaining = split(run, report.remaining, executed if minimal else None)
    if diff:
        emit("".join(unified_diff(x) for x in report.changed_files))
        if output_format is OutputFormat.text:
            n = len(report.applied)
            typer.echo(f"Would fix {n} finding{'s' if n != 1 else ''} in {len(report.changed_files)} file(s); "
                       f"{len(remaining.reached)} this run reaches would remain, {len(remaining.not_reached)} it "
                       "does not reach.", err=True)
        return EXIT_FINDINGS if failing(report.applied + remaining.reached, report.errors, settings.fail_on) \
            else EXIT_CLEAN
    summary = Summary("fix", tgt, remaining.reached, report.errors, len(report.fixes),
                      fixed=report.applied, unsafe_fixes=settings.unsafe_fixes, color=color,
                      knowledge=knowledge_applied(everything, report.applied + report.remaining, report.identities),
                      not_read=report.not_read, fail_on=settings.fail_on,
                      identity=identity_lines(everything, report.identities),
                      identity_json=identity_json(everything, report.identities), load_checks=report.load_checks,
                      run=run.describe() + (" (--minimal)" if minimal else ""), not_reached=remaining.not_reached)
    emit_pieces(render_pieces(output_format.value, summary))
    if fixed_text is not None and run.command:
        one_line = " ".join(fixed_text.replace("\\\n", " ").split())  # fix's appended overrides continue lines
        typer.echo(f"The command, fixed (run it so; nothing was written for it): {one_line}",
                   err=output_format is not OutputFormat.text)
    if kept:
        typer.echo(kept, err=output_format is not OutputFormat.text)
    if report.broken:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if failing(remaining.reached, report.errors, settings.fail_on) else EXIT_CLEAN


def _installed_verl(package: str) -> bool:
    """Whether a run's verl package is the installed distribution's (its RECORD in site-packages), not a tree's own
    copy: asked of the distribution's metadata, as `fix --installed` finds it, never of the import system, which
    finds a `verl` folder in the working directory first under `python -m rlcompat`."""
    from rlcompat.installed.locate import InstalledError, locate

    try:
        roots = locate("verl").roots
    except InstalledError:
        return False
    return any(os.path.realpath(r) == os.path.realpath(package) for r in roots)
