"""The typer app: scan, fix, rules, rule, targets and --version over rlcompat.api, and the registration of every
other command. Exit codes: 0 clean, 1 findings remain, 2 usage or internal error (cli/common.py)."""

from __future__ import annotations

import os
import sys
from typing import Annotated, List, Optional

import typer

from rlcompat.cli.common import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, EXIT_INTERRUPTED, FailOn, OutputFormat
from rlcompat.cli.common import failing, nothing_to_check
from rlcompat.cli.common import emit as _emit, emit_pieces
from rlcompat.cli.common import fail as _fail
from rlcompat.knowledge.files import KnowledgeFileError
from rlcompat.cli.common import run_settings as _settings
from rlcompat.lang.pyspeed.hooks import collector_off

def _typer() -> typer.Typer:
    return typer.Typer(
        name="rlcompat",
        help="Find and fix what stops LLM RL post-training (verl, OpenRLHF, TRL) on older NVIDIA GPUs.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )


app = _typer()


def _target(spec: Optional[str], settings):
    from rlcompat.knowledge.targets import TargetError, resolve_target

    spec = spec or settings.target
    if not spec:
        raise _fail('no target GPU: pass --target (e.g. --target sm61, --target P40, --target auto) or set target = "sm61" under [tool.rlcompat] in pyproject.toml')
    try:
        return resolve_target(spec)
    except TargetError as exc:
        raise _fail(str(exc))


def _color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _progress(total: int):
    """A progress bar on stderr for long runs in a terminal; otherwise nothing."""
    if total < 200 or not sys.stderr.isatty():
        return None, None
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(stderr=True), transient=True)
    task = bar.add_task("checking", total=total)
    return bar, lambda n: bar.advance(task, n)


TargetOpt = Annotated[Optional[str], typer.Option("--target", "-t", help="GPU to check for: sm61, 7.5, P40, T4, ... or auto (read through NVML).")]
SelectOpt = Annotated[Optional[List[str]], typer.Option("--select", help="Only these codes or prefixes (RLC1, RLC201). Comma-separated or repeated.")]
IgnoreOpt = Annotated[Optional[List[str]], typer.Option("--ignore", help="Skip these codes or prefixes.")]
ExcludeOpt = Annotated[Optional[List[str]], typer.Option("--extend-exclude", help="More paths or patterns to skip.")]
ForceExcludeOpt = Annotated[bool, typer.Option("--force-exclude", help="Apply excludes to files named on the command line too (for pre-commit).")]
FormatOpt = Annotated[OutputFormat, typer.Option("--output-format", help="text, json, sarif or github.")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write .rlcompat_cache/.")]
ConfigOpt = Annotated[Optional[str], typer.Option("--config", help="A pyproject.toml to read [tool.rlcompat] from.")]
FailOnOpt = Annotated[Optional[FailOn], typer.Option("--fail-on", help="Exit 1 for remaining findings of this severity or above: warning (default: any finding) or error (only what breaks a run; warnings are reported but pass).", show_default=False)]
AllowEmptyOpt = Annotated[bool, typer.Option("--allow-empty", help="Exit as for a clean tree when no file to check is found (default: exit 2, so a wrong path fails CI).")]
RunOpt = Annotated[Optional[str], typer.Option("--run", help="A launch script (LAUNCH.sh) or a command line in quotes (\"python3 -m verl.trainer.main_ppo [--config-path DIR --config-name NAME] key=value ...\"): check it, the config it composes and the verl package it runs, and report only the findings that run reaches (the rest are counted by why); the exit code counts reached findings only.")]
PathsArg = Annotated[Optional[List[str]], typer.Argument(help="Files or directories (default: .).", show_default=False)]


def _discovered_count(paths, settings) -> int:
    from rlcompat.pipeline.discovery import discover

    return len(discover(paths, settings)[0])


@app.command()
def scan(
    paths: PathsArg = None,
    target: TargetOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    extend_exclude: ExcludeOpt = None,
    force_exclude: ForceExcludeOpt = False,
    output_format: FormatOpt = OutputFormat.text,
    statistics: Annotated[bool, typer.Option("--statistics", help="Count findings per rule.")] = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when findings remain.")] = False,
    fail_on: FailOnOpt = None,
    allow_empty: AllowEmptyOpt = False,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", help="Worker processes (default: all cores).")] = None,
    no_cache: NoCacheOpt = False,
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="Report only findings not recorded in this baseline file.")] = None,
    write_baseline: Annotated[Optional[str], typer.Option("--write-baseline", help="Record every current finding in this file and exit 0.")] = None,
    config: ConfigOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every file not read, with why (by default: counts).")] = False,
    run_script: RunOpt = None,
) -> None:
    """List every hazard for the target GPU with file:line, why, and the fix."""
    from rlcompat.api import scan_paths
    from rlcompat.report.knowledge_summary import identity_json, identity_lines, knowledge_applied
    from rlcompat.report import Summary, render_pieces

    run, scripts = None, None
    if run_script:
        from rlcompat.cli.run import run_of, run_paths, run_scripts

        run = run_of(run_script)
        paths, scripts = run_paths(paths, run), run_scripts(run)
    paths = paths or ["."]
    settings = _settings(paths, config, select, ignore, extend_exclude, force_exclude, fail_on=fail_on)
    tgt = _target(target, settings)
    show_bar = output_format is OutputFormat.text and sys.stderr.isatty()
    bar, advance = _progress(_discovered_count(paths, settings)) if show_bar else (None, None)
    if bar:
        with bar:
            report = scan_paths(paths, tgt, settings, jobs=jobs, progress=advance, use_cache=not no_cache,
                                scripts=scripts)
    else:
        report = scan_paths(paths, tgt, settings, jobs=jobs, use_cache=not no_cache, scripts=scripts)
    if report.missing:
        from rlcompat.pipeline.discovery import why_not_checked

        raise _fail(f"{report.missing[0]}: {why_not_checked(report.missing[0])}")
    if not report.results and not allow_empty:
        raise nothing_to_check(paths)
    findings = report.findings
    if write_baseline or baseline:
        from rlcompat.report import baseline as baseline_file  # hashes findings: OpenSSL's import is ~10 ms a run
    if write_baseline:
        n = baseline_file.write(write_baseline, findings, tgt.name)
        typer.echo(f"Wrote {n} finding{'s' if n != 1 else ''} to {write_baseline}; scan with --baseline {write_baseline} to see only new ones.", err=True)
        raise typer.Exit(EXIT_CLEAN)
    if baseline:
        try:
            findings, known = baseline_file.new_findings(findings, baseline)
        except baseline_file.BaselineError as exc:
            raise _fail(str(exc))
        if output_format is OutputFormat.text and known:
            typer.echo(f"{known} finding{'s' if known != 1 else ''} already in {baseline} not shown.", err=True)
    not_reached = []
    if run is not None:
        from rlcompat.analysis.run_model import split

        parts = split(run, findings)
        findings, not_reached = parts.reached, parts.not_reached
    summary = Summary("scan", tgt, findings, report.errors, report.files_checked, report.suppressed,
                      unsafe_fixes=settings.unsafe_fixes, statistics=statistics, color=_color(),
                      knowledge=knowledge_applied(paths or [], findings, report.identities),
                      not_read=report.not_read, fail_on=settings.fail_on, identity=identity_lines(paths, report.identities),
                      identity_json=identity_json(paths, report.identities), verbose=verbose,
                      run=run.describe() if run else "", not_reached=not_reached)
    emit_pieces(render_pieces(output_format.value, summary))
    if exit_zero:
        raise typer.Exit(EXIT_CLEAN)
    raise typer.Exit(EXIT_FINDINGS if failing(findings, report.errors, settings.fail_on) else EXIT_CLEAN)


@app.command()
def fix(
    paths: PathsArg = None,
    target: TargetOpt = None,
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Also apply fixes that may change numerics (e.g. bf16 -> fp16).")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Show the changes as a diff; write nothing.")] = False,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    extend_exclude: ExcludeOpt = None,
    force_exclude: ForceExcludeOpt = False,
    output_format: FormatOpt = OutputFormat.text,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when findings remain.")] = False,
    fail_on: FailOnOpt = None,
    allow_empty: AllowEmptyOpt = False,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", help="Worker processes (default: all cores).")] = None,
    no_cache: NoCacheOpt = False,
    config: ConfigOpt = None,
    installed: Annotated[Optional[str], typer.Option("--installed", help="Fix this installed distribution (verl) in site-packages instead of paths, keeping its originals: `rlcompat restore NAME` undoes it.")] = None,
    run_script: RunOpt = None,
    minimal: Annotated[bool, typer.Option("--minimal", help="With --run: apply only the fixes of findings the run reaches (the script's own, and the package code on its path).")] = False,
    trace: Annotated[Optional[str], typer.Option("--trace", help="With --run --minimal: a `rlcompat verify --trainer --trace --output-format json` report; fixes of findings it shows never executed are left out too.")] = None,
) -> None:
    """Rewrite the hazards that have a fix (safe ones by default); report what is left."""
    if (minimal or trace) and not run_script:
        raise _fail("--minimal and --trace need --run LAUNCH.sh: the run whose reached findings are fixed")
    if trace and not minimal:
        raise _fail("--trace narrows --minimal: pass --run LAUNCH.sh --minimal --trace REPORT")
    if run_script and installed:
        raise _fail("--run and --installed do not go together: --run fixes the verl package the script runs")
    if run_script:
        from rlcompat.cli.run import fix_run, run_of, run_paths

        launch = run_of(run_script)
        settings = _settings(run_paths(paths, launch), config, select, ignore, extend_exclude, force_exclude,
                             unsafe_fixes, fail_on)
        tgt = _target(target, settings)
        try:
            code = fix_run(launch, paths, tgt, settings, diff=diff, output_format=output_format, exit_zero=exit_zero,
                           jobs=jobs, use_cache=not no_cache, minimal=minimal, trace=trace, color=_color())
        except KeyboardInterrupt:
            typer.echo("rlcompat: interrupted; files already written are complete, the rest untouched", err=True)
            raise typer.Exit(EXIT_INTERRUPTED)
        raise typer.Exit(code)
    if installed:
        from rlcompat.cli.common import split_codes
        from rlcompat.installed.command import fix_installed_command

        options = dict(select=split_codes(select), ignore=split_codes(ignore),
                       extend_exclude=tuple(extend_exclude) if extend_exclude else None,
                       unsafe_fixes=unsafe_fixes or None, fail_on=fail_on.value if fail_on else None)
        tgt = _target(target, _settings([], config, None, None, None, False))
        raise typer.Exit(fix_installed_command(installed, paths, tgt, options, diff=diff, output_format=output_format,
                                               exit_zero=exit_zero, jobs=jobs))
    from rlcompat.api import fix_paths
    from rlcompat.pipeline.fixer import unified_diff
    from rlcompat.report.knowledge_summary import identity_json, identity_lines, knowledge_applied
    from rlcompat.report import Summary, render_pieces

    paths = paths or ["."]
    settings = _settings(paths, config, select, ignore, extend_exclude, force_exclude, unsafe_fixes, fail_on)
    tgt = _target(target, settings)
    try:
        report = fix_paths(paths, tgt, settings, write=not diff, jobs=jobs, use_cache=not no_cache)
    except KeyboardInterrupt:
        # Each write is one rename (source.write_atomic): a file is either fixed whole or untouched.
        typer.echo("rlcompat: interrupted; files already written are complete, the rest untouched", err=True)
        raise typer.Exit(EXIT_INTERRUPTED)
    if report.missing:
        from rlcompat.pipeline.discovery import why_not_checked

        raise _fail(f"{report.missing[0]}: {why_not_checked(report.missing[0])}")
    if not report.fixes and not allow_empty:
        raise nothing_to_check(paths)
    if diff:
        _emit("".join(unified_diff(x) for x in report.changed_files))
        if output_format is OutputFormat.text:
            n = len(report.applied)
            for line in report.load_checks:
                typer.echo(f"Load check: {line}.", err=True)
            typer.echo(f"Would fix {n} finding{'s' if n != 1 else ''} in {len(report.changed_files)} file(s); "
                       f"{len(report.remaining)} would remain.", err=True)
            raise typer.Exit(EXIT_FINDINGS if failing(report.applied + report.remaining, report.errors, settings.fail_on) else EXIT_CLEAN)
    summary = Summary("fix", tgt, report.remaining, report.errors, len(report.fixes),
                      fixed=report.applied, unsafe_fixes=settings.unsafe_fixes, color=_color(),
                      knowledge=knowledge_applied(paths or [], report.applied + report.remaining, report.identities),
                      not_read=report.not_read, fail_on=settings.fail_on, identity=identity_lines(paths, report.identities),
                      identity_json=identity_json(paths, report.identities), load_checks=report.load_checks)
    emit_pieces(render_pieces(output_format.value, summary))
    if report.broken:
        raise typer.Exit(EXIT_ERROR)  # a rule produced unparsable code: an internal error, whatever --exit-zero says
    if exit_zero:
        raise typer.Exit(EXIT_CLEAN)
    raise typer.Exit(EXIT_FINDINGS if failing(report.remaining, report.errors, settings.fail_on) else EXIT_CLEAN)


@app.command("rules")
def list_rules(
    target: TargetOpt = None,
    output_format: Annotated[OutputFormat, typer.Option("--output-format", help="text or json.")] = OutputFormat.text,
) -> None:
    """List the rule catalog (only those that apply to --target, if given)."""
    import json

    from rlcompat.rules import all_rules

    tgt = _target(target, _settings([], None, None, None, None, False)) if target else None
    rules = [r for r in all_rules() if tgt is None or r.applies_to(tgt)]
    if output_format is OutputFormat.json:
        _emit(json.dumps([_rule_dict(r) for r in rules], indent=2) + "\n")
        return
    for r in rules:
        fixable = "fix" if r.has_fix() else "   "
        typer.echo(f"{r.code}  {fixable}  {r.name:<34} {r.title}")


def _rule_dict(r) -> dict:
    return {"code": r.code, "name": r.name, "title": r.title, "languages": sorted(r.languages), "severity": r.severity,
            "fixable": r.has_fix(), "targets": r.targets(), "what": r.what, "why": r.why, "fix_safety": r.fix_safety}


@app.command("rule")
def explain_rule(code: Annotated[str, typer.Argument(help="A rule code (RLC101) or name (torch-bfloat16-dtype).")]) -> None:
    """Explain one rule: what it finds, why it breaks which GPUs, the fix and its safety, examples."""
    from rlcompat.docs import rule_markdown
    from rlcompat.rules import all_rules

    wanted = code.strip()
    match = next((r for r in all_rules() if r.code == wanted.upper() or r.name == wanted.lower()), None)
    if match is None:
        raise _fail(f"no rule {code!r}; `rlcompat rules` lists them")
    _emit(rule_markdown(match))


@app.command()
def targets(
    name: Annotated[Optional[str], typer.Argument(help="One target (sm61, P40, 7.5) to show in full.")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--output-format", help="text or json.")] = OutputFormat.text,
) -> None:
    """Print the GPU target table and the named products (`rlcompat targets rtx4090`), or one target's profile with sources."""
    from rlcompat.knowledge.targets import TargetError, all_targets, products, resolve_target
    from rlcompat.report import target_view

    if name:
        try:
            t = resolve_target(name)
        except TargetError as exc:
            raise _fail(str(exc))
        _emit(target_view.profile_json(t) if output_format is OutputFormat.json else target_view.profile_text(t))
    else:
        view = target_view.table_json if output_format is OutputFormat.json else target_view.table_text
        _emit(view(all_targets(), products()))


def _version_flags(ctx: typer.Context, param, value: bool) -> bool:
    # Both flags are eager, so click calls this for each (given or not) before any command runs, in the order they
    # were given: print once both are known, which works for `--version --verbose` and `--verbose --version` alike.
    ctx.meta[f"rlcompat.{param.name}"] = value
    flags = {k: ctx.meta.get(f"rlcompat.{k}") for k in ("version", "verbose")}
    if flags["version"] and flags["verbose"] is not None:
        from rlcompat.cli.version_info import version_text

        _emit(version_text(verbose=bool(flags["verbose"])))
        raise typer.Exit(EXIT_CLEAN)
    return value


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-V", is_eager=True, callback=_version_flags,
                                          help="Print the version and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", is_eager=True, callback=_version_flags,
                                          help="With --version: also the rule catalog and knowledge files.")] = False,
) -> None:
    """Find and fix what stops LLM RL post-training (verl, OpenRLHF, TRL) on older NVIDIA GPUs."""


# Commands that live in their own modules are registered here, one line each. Those modules must keep heavy
# imports (torch, verl, transformers) inside the command function, so `rlcompat scan` starts fast.
# --- extra commands ---
from rlcompat.doctor.command import doctor_command  # noqa: E402

app.command("doctor")(doctor_command)

from rlcompat.verify.command import verify_command  # noqa: E402
app.command("verify")(verify_command)

from rlcompat.cli.matrix import matrix_command  # noqa: E402
app.command("matrix")(matrix_command)

from rlcompat.server.command import server_command  # noqa: E402
app.command("server")(server_command)

from rlcompat.installed.command import restore_command  # noqa: E402
app.command("restore")(restore_command)
# --- end extra commands ---


def _app_for(args: List[str]) -> typer.Typer:
    """The app to run `args` with: for `scan` and `fix` (a pre-commit hook's every start), one that holds only that
    command, since typer reads the signature and type hints of every command it holds before it runs one (about 10%
    of a warm scan); what it prints and does is the same (tests/test_cli.py holds them to the whole app)."""
    name = args[0] if args else ""  # a root option before it (`--help scan`) asks the whole app
    command = {"scan": scan, "fix": fix}.get(name)
    if command is None:
        return app
    one = _typer()
    one.callback()(_root)
    one.command(name)(command)
    return one


def main() -> None:
    from rlcompat.cli.stdout import Watched, leave_quietly

    watched = sys.stdout = Watched(sys.stdout)
    with collector_off():  # lang/pyspeed/collector.py: LibCST's objects are not walked again and again
        try:
            _app_for(sys.argv[1:])()
        except SystemExit:
            if watched.reader_gone:  # the reader closed the pipe (`| head`): cli/stdout.py
                leave_quietly()
            raise
        except BrokenPipeError:
            leave_quietly()
        except KeyboardInterrupt:  # outside a command body (fix handles its own)
            typer.echo("rlcompat: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except KnowledgeFileError as exc:  # an installed knowledge file that does not parse: no command can run
            typer.echo(f"rlcompat: {exc}", err=True)
            sys.exit(EXIT_ERROR)
