"""`rlcompat matrix`: the typer command. Registered in rlcompat/cli/app.py; imports nothing heavy at module level."""

from __future__ import annotations

import os
from enum import Enum
from typing import Annotated, List, Optional

import typer

# The GPUs people train on, oldest first: Pascal (P100, P40), Volta, Turing, Ampere (A100, RTX 30xx), Ada, Hopper.
DEFAULT_TARGETS = ("sm60", "sm61", "sm70", "sm75", "sm80", "sm86", "sm89", "sm90")


class MatrixFormat(str, Enum):
    text = "text"
    json = "json"


def matrix_command(
    paths: Annotated[Optional[List[str]], typer.Argument(help="Files or directories (default: .).", show_default=False)] = None,
    targets: Annotated[str, typer.Option("--targets", help="Comma-separated GPUs to check for (sm61, T4, 8.6, ...).")] = ",".join(DEFAULT_TARGETS),
    select: Annotated[Optional[List[str]], typer.Option("--select", help="Only these codes or prefixes (RLC1, RLC201). Comma-separated or repeated.")] = None,
    ignore: Annotated[Optional[List[str]], typer.Option("--ignore", help="Skip these codes or prefixes.")] = None,
    extend_exclude: Annotated[Optional[List[str]], typer.Option("--extend-exclude", help="More paths or patterns to skip.")] = None,
    force_exclude: Annotated[bool, typer.Option("--force-exclude", help="Apply excludes to files named on the command line too.")] = False,
    output_format: Annotated[MatrixFormat, typer.Option("--output-format", help="text or json.")] = MatrixFormat.text,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Exit 0 even when a target does not run as it is.")] = False,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help="Exit as for a tree that runs everywhere when no file to check is found (default: exit 2).")] = False,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", help="Worker processes (default: all cores).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write .rlcompat_cache/.")] = False,
    config: Annotated[Optional[str], typer.Option("--config", help="A pyproject.toml to read \\[tool.rlcompat] from.")] = None,
    run_name: Annotated[str, typer.Option("--run", help="The run judged: default (the framework's default entry config: verl's ppo_trainer with the FSDP engine), all (every finding), an option's run (megatron, fused-kernels, ...), or a launch script (LAUNCH.sh) or a command line in quotes (\"python3 -m verl.trainer.main_ppo key=value ...\"): its run, with the verl package it runs checked too.")] = "default",
) -> None:
    """Which GPUs the tree runs on: every target from one pass, as a table of targets x rule families with a
    verdict per target for one run (--run; findings only another run reaches are counted apart). Exit 0 when every target runs as it is, 1 when one needs a fix or is blocked (or a file
    could not be checked), 2 on usage or internal error."""
    from rlcompat.cli.common import EXIT_CLEAN, EXIT_FINDINGS
    from rlcompat.cli.common import emit as _emit
    from rlcompat.cli.common import fail as _fail
    from rlcompat.cli.common import run_settings as _settings
    from rlcompat.pipeline.matrix import run_matrix
    from rlcompat.report import matrix as matrix_report
    from rlcompat.knowledge.targets import TargetError, resolve_target

    from rlcompat.analysis import run_scope

    launch, scripts = None, None
    if run_name not in run_scope.run_names() and (os.path.isfile(run_name) or len(run_name.split()) > 1):
        from rlcompat.cli.run import run_of, run_paths, run_scripts

        launch = run_of(run_name)
        paths, scripts = run_paths(paths, launch), run_scripts(launch)
    paths = paths or ["."]
    if launch is None and run_name not in run_scope.run_names():
        raise _fail(f"--run {run_name!r} names no run, no launch script and no command line: use one of "
                    f"{', '.join(run_scope.run_names())}, the path of a launch script, or a command line in quotes")
    settings = _settings(paths, config, select, ignore, extend_exclude, force_exclude)
    resolved = []
    for spec in (s.strip() for s in targets.split(",")):
        if not spec:
            continue
        if spec.lower() == "auto":
            raise _fail("--targets takes GPU names (sm61, T4, ...), not auto; `rlcompat scan --target auto` checks the GPUs here")
        try:
            target = resolve_target(spec)
        except TargetError as exc:
            raise _fail(str(exc))
        if target not in resolved:
            resolved.append(target)
    if not resolved:
        raise _fail("--targets names no GPU; pass e.g. --targets sm61,sm75,sm86")
    run = run_matrix(paths, resolved, settings, jobs=jobs, use_cache=not no_cache, scripts=scripts)
    if run.missing:
        from rlcompat.pipeline.discovery import why_not_checked

        raise _fail(f"{run.missing[0]}: {why_not_checked(run.missing[0])}")
    if not run.files and not allow_empty:
        from rlcompat.cli.common import nothing_to_check

        raise nothing_to_check(paths)
    matrix = matrix_report.build(run, unsafe_fixes=settings.unsafe_fixes, run_name=run_name, launch=launch)
    _emit(matrix_report.render_json(matrix) if output_format is MatrixFormat.json else matrix_report.render_text(matrix))
    raise typer.Exit(EXIT_CLEAN if (exit_zero or matrix.all_run) else EXIT_FINDINGS)
