"""The command line of installed-package fixing: `rlcompat fix --installed NAME` (app.py's fix hands over here) and
`rlcompat restore NAME`. Exit codes as every command: 0 clean, 1 findings remain, 2 usage or internal error."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer


def fix_installed_command(name: str, paths, tgt, options, *, diff: bool, output_format, exit_zero: bool,
                          jobs: Optional[int]) -> int:
    """`rlcompat fix --installed NAME`: the exit code. `options` are the fix options as the command line gave them
    (select, ignore, extend_exclude, unsafe_fixes, fail_on); [tool.rlcompat] of the current folder is not read:
    its excludes are paths of the user's tree, not of site-packages."""
    from rlcompat.cli.common import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, emit, emit_pieces, fail, failing
    from rlcompat.config import Options
    from rlcompat.pipeline.fixer import unified_diff
    from rlcompat.installed.locate import InstalledError, fix_command
    from rlcompat.installed.patch import fix_installed
    from rlcompat.report.knowledge_summary import identity_json, identity_lines, knowledge_applied
    from rlcompat.report import Summary, render_pieces

    if paths:
        raise fail(f"--installed {name} fixes the installed package: pass no paths with it (got {' '.join(paths)})")
    settings = Options().with_overrides(**options)
    try:
        report, done = fix_installed(name, tgt, settings, write=not diff, jobs=jobs)
    except InstalledError as exc:
        raise fail(str(exc))
    except KeyboardInterrupt:
        typer.echo("rlcompat: interrupted; the originals of the files written so far are kept: `rlcompat restore "
                   f"{name}` undoes them", err=True)
        raise typer.Exit(130)
    roots = [str(r) for r in done.installed.roots]
    if diff:
        emit("".join(unified_diff(x) for x in report.changed_files))
        typer.echo(f"Would fix {len(report.applied)} finding(s) in {len(report.changed_files)} file(s) of "
                   f"{done.installed.name} {done.installed.version}; {len(report.remaining)} would remain.", err=True)
        return EXIT_FINDINGS if failing(report.applied + report.remaining, report.errors, settings.fail_on) else EXIT_CLEAN
    summary = Summary("fix", tgt, report.remaining, report.errors, len(report.fixes), fixed=report.applied,
                      unsafe_fixes=settings.unsafe_fixes, color=sys.stdout.isatty(),
                      knowledge=knowledge_applied(roots, report.applied + report.remaining, report.identities),
                      not_read=report.not_read, fail_on=settings.fail_on,
                      identity=identity_lines(roots, report.identities),
                      identity_json=identity_json(roots, report.identities),
                      fix_command=fix_command(done.installed.name, tgt.name))
    emit_pieces(render_pieces(output_format.value, summary))
    typer.echo(backup_line(done), err=output_format.value != "text")
    if report.broken:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if failing(report.remaining, report.errors, settings.fail_on) else EXIT_CLEAN


def backup_line(done) -> str:
    inst, m = done.installed, done.manifest
    if m is None:
        return f"{inst.name} {inst.version} at {inst.site}: no file changed, no backup kept."
    what = (f"changed {len(done.written)} file(s), kept the original of {len(done.kept)} new one(s)" if done.written
            else "no file changed now")
    replaced = f"; the backup of {done.replaced} (no longer installed) was replaced" if done.replaced else ""
    return (f"{inst.name} {inst.version} at {inst.site}: {what}{replaced}. Patched files: {len(m.files)}; their "
            f"originals, patch.diff and manifest.json are in {done.folder}; `rlcompat restore {inst.name}` undoes it.")


def restore_command(
    name: Annotated[Optional[str], typer.Argument(help="The installed distribution to restore (verl).", show_default=False)] = None,
    installed: Annotated[Optional[str], typer.Option("--installed", help="The same as NAME.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Put the originals back even over files edited since rlcompat patched them.")] = False,
) -> None:
    """Undo `rlcompat fix --installed NAME`: put back the original bytes of every file it changed, after checking
    they still hold what rlcompat wrote, and remove the backup."""
    from rlcompat.cli.common import EXIT_CLEAN, fail
    from rlcompat.installed.locate import InstalledError
    from rlcompat.installed.patch import restore

    if name and installed and name != installed:
        raise fail(f"restore {name} --installed {installed}: name one distribution")
    wanted = name or installed
    if not wanted:
        raise fail("name the installed distribution to restore: `rlcompat restore verl`")
    try:
        done = restore(wanted, force=force)
    except InstalledError as exc:
        raise fail(str(exc))
    if done.stale:
        typer.echo(f"{done.name} {done.version} is installed, not the patched {done.stale}: the patch went with that "
                   f"install; removed its backup ({done.folder}).")
    else:
        again = f" ({len(done.already)} already held the original)" if done.already else ""
        typer.echo(f"Restored {len(done.restored)} file(s) of {done.name} {done.version} to their original bytes"
                   f"{again}; removed the backup ({done.folder}).")
    raise typer.Exit(EXIT_CLEAN)
