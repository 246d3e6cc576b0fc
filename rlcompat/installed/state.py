"""The backup of a patched installed distribution: a per-user state folder holding the original bytes of every file
rlcompat changed, the patch as a unified diff, and a manifest; and whether the patch is still on disk.

The folder is `$XDG_STATE_HOME/rlcompat/installed/<dist>-<12 hex of the site-packages path>/` (`~/.local/state`
without XDG_STATE_HOME). Not next to the dist-info: pip removes that folder on an upgrade or a reinstall, and with
it the record doctor needs to say the patch is gone; per site-packages folder, so two environments with the same
verl keep separate backups. Layout: `manifest.json`, `patch.diff`, `originals/<path in site-packages>`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rlcompat.installed.locate import InstalledError, fix_command, normalise

MANIFEST, DIFF, ORIGINALS = "manifest.json", "patch.diff", "originals"
FORMAT = 1


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def state_home(env=None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "rlcompat" / "installed"


def folder_for(name: str, site: Path, env=None) -> Path:
    key = hashlib.sha256(str(site).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return state_home(env) / f"{normalise(name)}-{key}"


@contextmanager
def locked(folder: Path, what: str):
    """Hold `folder`'s lock while a fix or a restore reads and writes the package and its backup: two at once could
    keep a file already patched by the other as its "original". The lock is the open file's, so the system drops it
    when the process ends, however it ends."""
    path = folder.parent / f"{folder.name}.lock"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a+b")
    except OSError as exc:
        raise InstalledError(f"cannot use the backup folder {folder} ({exc.strerror or exc}); nothing was written: "
                             "make it writable, or set XDG_STATE_HOME to a folder that is") from exc
    with fh:
        if not _try_lock(fh):
            raise InstalledError(f"another rlcompat fix --installed or restore is changing {what} (it holds {path}): "
                                 "let it finish, then run this again")
        yield


def _try_lock(fh) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


@dataclass
class FileEntry:
    original_sha256: str  # the bytes kept in originals/
    patched_sha256: str  # the bytes rlcompat wrote
    record: str  # RECORD's hash of the installed file ("sha256=..."), "" when RECORD lists none
    matched_record: bool  # whether the original was the file as installed (False: edited before rlcompat came)


@dataclass
class Manifest:
    dist: str
    version: str
    site: str
    target: str
    unsafe_fixes: bool
    rlcompat_version: str
    time: str  # UTC, ISO 8601, of the last fix
    files: dict[str, FileEntry] = field(default_factory=dict)  # path in site-packages (posix) -> entry
    format: int = FORMAT

    def command(self) -> str:
        """The command that (re-)applies this patch."""
        return fix_command(self.dist, self.target, self.unsafe_fixes)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        data = json.loads(text)
        files = {k: FileEntry(**v) for k, v in data.pop("files").items()}
        return cls(**data, files=files)


def load(folder: Path) -> Manifest | None:
    path = folder / MANIFEST
    try:
        text = path.read_text("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise InstalledError(f"{path}: cannot be read ({exc.strerror}); check its permissions") from exc
    try:
        manifest = Manifest.from_json(text)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InstalledError(f"{path}: not a manifest rlcompat wrote ({exc}); the originals are in "
                             f"{folder / ORIGINALS}: copy them back by hand, then delete {folder}") from exc
    if manifest.format != FORMAT:
        raise InstalledError(f"{path}: manifest format {manifest.format}, this rlcompat reads {FORMAT}: use the "
                             f"rlcompat {manifest.rlcompat_version} that wrote it")
    return manifest


def write_file(path: Path, data: bytes) -> None:
    """Create or replace `path` in one rename (the state folder's own files and restored package files alike)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".rlcompat-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(folder: Path, manifest: Manifest, diff: str) -> None:
    write_file(folder / DIFF, diff.encode("utf-8", "surrogateescape"))
    write_file(folder / MANIFEST, manifest.to_json().encode("utf-8"))  # last: a manifest names only what is kept


def original(folder: Path, rel: str, entry: FileEntry) -> bytes:
    """The kept original bytes of `rel`, checked against the manifest."""
    path = folder / ORIGINALS / rel
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InstalledError(f"{path}: the backup of {rel} cannot be read ({exc.strerror}); reinstall the "
                             f"distribution with pip (`pip install --force-reinstall ...`) to get the original") from exc
    if sha256(data) != entry.original_sha256:
        raise InstalledError(f"{path}: the backup of {rel} was changed since rlcompat kept it; reinstall the "
                             f"distribution with pip (`pip install --force-reinstall ...`) to get the original")
    return data


def current(site: Path, rel: str) -> bytes | None:
    try:
        return (site / rel).read_bytes()
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class PatchStatus:
    """Where a manifest's files stand now."""

    manifest: Manifest
    installed_version: str | None  # the version installed at the manifest's site now; None: not installed there
    patched: tuple[str, ...] = ()  # files holding what rlcompat wrote
    unpatched: tuple[str, ...] = ()  # files holding their original bytes again (a reinstall)
    edited: tuple[str, ...] = ()  # files holding neither (edited since, or removed)
    folder: Path | None = None  # the state folder the manifest is in

    @property
    def state(self) -> str:
        """applied, removed (every file original again), partly, edited, other-version or not-installed."""
        if self.installed_version is None:
            return "not-installed"
        if self.installed_version != self.manifest.version:
            return "other-version"
        if self.edited:
            return "edited"
        if not self.unpatched:
            return "applied"
        return "partly" if self.patched else "removed"


def status(manifest: Manifest, installed_version: str | None, folder: Path | None = None) -> PatchStatus:
    if installed_version != manifest.version:
        return PatchStatus(manifest, installed_version, folder=folder)
    site, groups = Path(manifest.site), {"patched": [], "unpatched": [], "edited": []}
    for rel, entry in sorted(manifest.files.items()):
        data = current(site, rel)
        digest = sha256(data) if data is not None else None
        kind = "patched" if digest == entry.patched_sha256 else "unpatched" if digest == entry.original_sha256 else "edited"
        groups[kind].append(rel)
    return PatchStatus(manifest, installed_version, **{k: tuple(v) for k, v in groups.items()}, folder=folder)


def installed_version_at(name: str, site: str) -> str | None:
    import importlib.metadata as metadata

    return next((d.version for d in metadata.distributions(path=[site])
                 if normalise(d.metadata["Name"] or "") == normalise(name)), None)


def patches_here(search_path: list[str], env=None) -> list[PatchStatus]:
    """The status of every patch rlcompat keeps for a site-packages folder on `search_path` (sys.path): what doctor
    reports. A manifest that cannot be read is skipped here (restore names it)."""
    home = state_home(env)
    here = {os.path.realpath(p) for p in search_path if p}
    out = []
    try:
        folders = sorted(p for p in home.iterdir() if p.is_dir())
    except OSError:
        return []
    for folder in folders:
        try:
            manifest = load(folder)
        except InstalledError:
            continue
        if manifest is None or manifest.site not in here:
            continue
        out.append(status(manifest, installed_version_at(manifest.dist, manifest.site), folder))
    return out

