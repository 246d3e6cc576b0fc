"""Reading and writing user files without losing anything: encoding, BOM and line endings kept, writes atomic."""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import tempfile
import tokenize
from dataclasses import dataclass

_COOKIE_LINE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
# C0 control bytes no text encoding writes (tab, newlines, form feed and ESC are text): a file that does not decode
# and holds one is binary, not text in an undeclared encoding. file(1)'s text test draws the same line.
_BINARY_BYTE = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


class SourceError(Exception):
    """The file cannot be read as text; the message says why and what to do."""


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str  # decoded, BOM removed, line endings as in the file
    encoding: str
    bom: bool
    raw: bytes


def decode(path: str, raw: bytes, language: str) -> SourceFile:
    bom = raw.startswith(codecs.BOM_UTF8)
    encoding = "utf-8"
    if language == "python":
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as exc:
            _refuse_binary(raw)
            raise SourceError(f"{exc.msg}; fix the coding cookie in the first two lines") from exc
        if encoding == "utf-8-sig":
            encoding = "utf-8"
    body = raw[len(codecs.BOM_UTF8):] if bom else raw
    if b"\x00" in body:
        raise SourceError("contains NUL bytes (binary?); exclude it or remove the NUL bytes")
    try:
        text = body.decode(encoding)
    except LookupError as exc:  # a cookie naming an encoding Python does not know
        raise SourceError(f"declares an unknown encoding {encoding!r}; fix the coding cookie in the first two lines") from exc
    except UnicodeDecodeError as exc:
        _refuse_binary(body)
        hint = "declare its encoding with a `# -*- coding: ... -*-` line" if language == "python" else "save it as UTF-8"
        # Say where: in a large file "invalid continuation byte" alone leaves the user searching.
        line = body.count(b"\n", 0, exc.start) + 1
        column = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SourceError(
            f"is not valid {encoding} (byte 0x{body[exc.start]:02x} at line {line}, column {column}: {exc.reason}); {hint}"
        ) from exc
    return SourceFile(path, text, encoding, bom, raw)


def _refuse_binary(data: bytes) -> None:
    """Raise SourceError if `data`, which did not decode, is a binary file rather than text in another encoding."""
    found = _BINARY_BYTE.search(data)
    if found is None:
        return
    line = data.count(b"\n", 0, found.start()) + 1
    raise SourceError(f"is a binary file, not text (control byte 0x{data[found.start()]:02x} at line {line}): "
                      "skipped; exclude it from the scan")


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise SourceError(f"cannot be read ({exc.strerror or exc}); {_os_hint(exc, 'read')}") from exc


def read(path: str, language: str) -> SourceFile:
    return decode(path, read_bytes(path), language)


def text_of(path: str, language: str) -> str | None:
    """A file's text as the scan reads it (its encoding, BOM removed), or None where it cannot be read or decoded: for
    the files a check consults beside the one it reports on (a framework's code, a recipe's module)."""
    try:
        return read(path, language).text
    except (SourceError, OSError):
        return None


def encode(source: SourceFile, new_text: str) -> bytes:
    data = new_text.encode(source.encoding)
    return codecs.BOM_UTF8 + data if source.bom else data


def _os_hint(exc: OSError, doing: str) -> str:
    """What the user can do about an OSError while reading or writing one of their files."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "check the permissions of the file and its directory" if doing == "write" else "check its permissions"
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return "free some disk space and run fix again"
    if exc.errno == errno.EROFS:
        return "the file system is mounted read-only; fix a writable copy"
    if exc.errno == errno.ENOENT:
        return "it was removed or renamed during the run; run again"
    return f"run {'fix' if doing == 'write' else 'it'} again, or exclude the file"


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data` in one rename: readers see the old file or the new one, never half of one.

    Raises SourceError with a one-line message; the original file is untouched and no temporary file is left,
    whatever goes wrong (a full disk, a permission, Ctrl-C).
    """
    # A symbolic link is written through to its file: replacing the link itself would turn it into a copy and
    # leave the file it points at unfixed.
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise SourceError(f"cannot be written ({exc.strerror or exc}); {_os_hint(exc, 'write')}") from exc
    # A rename would go through a read-only file (only the directory's permission counts), and root may write any
    # file: look at the mode bits, so a file the user made read-only stays as it is.
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(real, os.W_OK):
        raise SourceError("is read-only; nothing was written: make it writable (chmod u+w) or exclude it")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".rlcompat-", suffix=".tmp", dir=os.path.dirname(real))
    except OSError as exc:
        raise SourceError(f"cannot be written: its directory refuses a temporary file ({exc.strerror or exc}); "
                          f"{_os_hint(exc, 'write')}") from exc
    try:
        try:
            view = memoryview(data)
            while view:  # os.write may write less than asked
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, st.st_mode & 0o7777)
        if hasattr(os, "geteuid") and os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
            try:  # root fixing a user's tree: the new file keeps its owner
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise SourceError(f"cannot be written ({exc.strerror or exc}); the file is unchanged: "
                              f"{_os_hint(exc, 'write')}") from exc
        raise
