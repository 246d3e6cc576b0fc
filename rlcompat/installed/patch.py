"""`fix --installed` and `restore`: the fix pipeline of `rlcompat fix` over an installed distribution's package,
with the original bytes of every file it changes kept first (state.py), and those bytes put back."""

from __future__ import annotations

import difflib
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from rlcompat.installed import state
from rlcompat.installed.locate import Installed, InstalledError, locate, record_hash, writable
from rlcompat.installed.state import FileEntry, Manifest


@dataclass
class Patched:
    """What `fix --installed` did besides the fix report."""

    installed: Installed
    folder: Path
    kept: list[str] = field(default_factory=list)  # files whose original was kept by this run
    written: list[str] = field(default_factory=list)  # files this run wrote
    replaced: str | None = None  # the version of a stale backup this run replaced (another version was patched)
    manifest: Manifest | None = None


def fix_installed(name: str, target, settings, *, write: bool = True, jobs: int | None = None, env=None, skip=None):
    """(FixReport, Patched). Nothing is written with `write=False` (--diff). `skip`: as `api.fix_paths`'s (the
    findings `fix --run --minimal` leaves alone)."""
    from rlcompat.api import fix_paths

    installed = locate(name)
    if write:
        writable(installed)
    report = fix_paths([str(r) for r in installed.roots], target, settings, write=False, jobs=jobs, skip=skip)
    folder = state.folder_for(installed.name, installed.site, env)
    done = Patched(installed, folder)
    changed = [x for x in report.changed_files if not x.error]
    if not write or not changed:
        done.manifest = state.load(folder)
        return report, done
    with state.locked(folder, f"{installed.name} at {installed.site}"):
        _write(report, done, changed, target, settings)
    return report, done


def _write(report, done: Patched, changed, target, settings) -> None:
    """Keep the originals, then write each planned file whose bytes are still those the fix read."""
    installed, folder = done.installed, done.folder
    plans = _plans(installed, changed)
    try:
        manifest, before = _keep(done, plans, target, settings)
    except OSError as exc:
        raise InstalledError(f"cannot keep the originals in {folder} ({exc.strerror or exc}); nothing was written: "
                             "make it writable, or set XDG_STATE_HOME to a folder that is") from exc
    from rlcompat.pipeline.source import SourceError, write_atomic

    failed = []
    for path, rel, now, new in plans:
        problem = None
        if state.current(installed.site, rel) != now:
            problem = "changed on disk while being fixed; nothing was written, run fix again"
        else:
            try:
                write_atomic(path, new)
            except SourceError as exc:
                problem = str(exc)
        if problem:
            _error(report, path, problem)
            failed.append(rel)
        else:
            done.written.append(rel)
    done.manifest = _forget(done, manifest, before, failed) if failed else manifest


def _plans(installed: Installed, changed) -> list[tuple[str, str, bytes, bytes]]:
    """(path, path in site-packages, the bytes there now, the bytes to write) of each file the fix changes whose
    bytes are still those the fix read."""
    from rlcompat.pipeline.source import encode

    plans = []
    for outcome in changed:
        try:
            rel = installed.relative(outcome.path)
        except ValueError:  # a link out of site-packages: not the distribution's file to keep
            report_error(outcome, f"is outside {installed.site} (a symbolic link?); nothing was written")
            continue
        now = state.current(installed.site, rel)
        source = _decoded(outcome.path, now)
        if source is None or source.text != outcome.original:
            report_error(outcome, "changed on disk while being fixed; nothing was written, run fix again")
            continue
        plans.append((outcome.path, rel, now, encode(source, outcome.fixed)))
    return plans


def _keep(done: Patched, plans, target, settings) -> tuple[Manifest, dict[str, str]]:
    """Keep the original of every file about to change for the first time and save the manifest and the diff, all
    before any package file is written: an interrupted run leaves each file original or patched, and restore and
    doctor know both. Returns the manifest and each earlier entry's patched hash."""
    from rlcompat.release import __version__

    installed, folder = done.installed, done.folder
    manifest = state.load(folder)
    if manifest is not None and manifest.version != installed.version:
        done.replaced, manifest = manifest.version, None  # that version's files went with its reinstall
        shutil.rmtree(folder)
    if manifest is None:
        manifest = Manifest(installed.name, installed.version, str(installed.site), target.name,
                            bool(settings.unsafe_fixes), __version__, "")
    before = {rel: e.patched_sha256 for rel, e in manifest.files.items()}
    for _, rel, now, new in plans:
        entry = manifest.files.get(rel)
        if entry is None:  # never a patched file kept as an original: only a file's first change keeps it
            state.write_file(folder / state.ORIGINALS / rel, now)
            recorded = installed.record.get(rel, "")
            entry = FileEntry(state.sha256(now), "", recorded, recorded == record_hash(now))
            done.kept.append(rel)
        entry.patched_sha256 = state.sha256(new)
        manifest.files[rel] = entry
    manifest.target, manifest.unsafe_fixes = target.name, bool(settings.unsafe_fixes)
    manifest.rlcompat_version, manifest.time = __version__, datetime.now(timezone.utc).isoformat(timespec="seconds")
    state.save(folder, manifest, _patch_text(folder, installed.site, manifest, {rel: new for _, rel, _, new in plans}))
    return manifest, before


def _forget(done: Patched, manifest: Manifest, before: dict[str, str], failed: list[str]) -> Manifest | None:
    """The manifest names only what was written (or kept from an earlier run): take back the files not written."""
    for rel in failed:
        if rel in before:
            manifest.files[rel].patched_sha256 = before[rel]
        else:
            del manifest.files[rel]
            (done.folder / state.ORIGINALS / rel).unlink(missing_ok=True)
            done.kept.remove(rel)
    if not manifest.files:
        shutil.rmtree(done.folder)
        return None
    state.save(done.folder, manifest, _patch_text(done.folder, done.installed.site, manifest, {}))
    return manifest


def _decoded(path: str, raw: bytes | None):
    from rlcompat.pipeline.discovery import language_of
    from rlcompat.pipeline.source import SourceError, decode

    if raw is None:
        return None
    try:
        return decode(path, raw, language_of(path) or "text")
    except SourceError:
        return None


def report_error(outcome, message: str) -> None:
    from rlcompat.findings import FileError

    outcome.error = FileError(outcome.path, message)
    outcome.applied = []


def _error(report, path: str, message: str) -> None:
    for outcome in report.fixes:
        if outcome.path == path:
            report_error(outcome, message)


def _patch_text(folder: Path, site: Path, manifest: Manifest, news: dict[str, bytes]) -> str:
    """The unified diff from every kept original to what the file holds after this run, paths as in site-packages
    (`patch -p1 -R -d SITE < patch.diff` undoes it by hand)."""
    out = []
    for rel, entry in sorted(manifest.files.items()):
        before = state.original(folder, rel, entry)
        after = news.get(rel)
        if after is None:
            after = state.current(site, rel) or b""
        out.append("".join(difflib.unified_diff(
            before.decode("utf-8", "surrogateescape").splitlines(keepends=True),
            after.decode("utf-8", "surrogateescape").splitlines(keepends=True), f"a/{rel}", f"b/{rel}")))
    return "".join(out)


@dataclass
class Restored:
    name: str
    version: str
    folder: Path
    restored: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)  # files that held their original bytes already
    stale: str | None = None  # the patched version, when another is installed now (nothing was put back)


def restore(name: str, *, force: bool = False, env=None) -> Restored:
    installed = locate(name)
    folder = state.folder_for(installed.name, installed.site, env)
    with state.locked(folder, f"{installed.name} at {installed.site}"):
        return _restore(installed, folder, force)


def _restore(installed: Installed, folder: Path, force: bool) -> Restored:
    name = installed.name
    manifest = state.load(folder)
    if manifest is None:
        raise InstalledError(f"no rlcompat patch of {installed.name} {installed.version} at {installed.site} "
                             f"(nothing in {folder}): nothing to restore")
    done = Restored(installed.name, installed.version, folder)
    if manifest.version != installed.version:
        # The patched release was replaced by another: its files, patched or not, are gone.
        done.stale = manifest.version
        shutil.rmtree(folder)
        return done
    status = state.status(manifest, installed.version)
    if status.edited and not force:
        rel = status.edited[0]
        what = "was removed" if state.current(installed.site, rel) is None else "was edited"
        raise InstalledError(f"{installed.site / rel} {what} since rlcompat patched it: keep your change and leave "
                             f"the patch, or put the original back anyway with `rlcompat restore {installed.name} "
                             f"--force` (or reinstall: pip install --force-reinstall {installed.name}=={installed.version})")
    writable(installed)
    originals = {rel: state.original(folder, rel, manifest.files[rel]) for rel in status.patched + status.edited}
    from rlcompat.pipeline.source import SourceError, write_atomic

    for rel, data in originals.items():
        path = installed.site / rel
        try:
            write_atomic(str(path), data) if path.exists() else state.write_file(path, data)
        except (SourceError, OSError) as exc:
            raise InstalledError(f"{path}: {exc}; {len(done.restored)} file(s) were restored, the backup in "
                                 f"{folder} is kept: fix the cause and run restore again") from exc
        done.restored.append(rel)
    done.already = list(status.unpatched)
    shutil.rmtree(folder)
    return done
