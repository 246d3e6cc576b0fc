"""Reading and writing user files without losing anything: encoding, BOM and line endings kept, writes atomic."""

from __future__ import annotations

import codecs
import io
import os
import re
import tempfile
import tokenize
from dataclasses import dataclass

_COOKIE_LINE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


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
            raise SourceError(f"{exc.msg}; fix the coding cookie in the first two lines") from exc
        if encoding == "utf-8-sig":
            encoding = "utf-8"
    body = raw[len(codecs.BOM_UTF8):] if bom else raw
    if b"\x00" in body:
        raise SourceError("contains NUL bytes (binary?); exclude it or remove the NUL bytes")
    try:
        text = body.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        hint = "declare its encoding with a `# -*- coding: ... -*-` line" if language == "python" else "save it as UTF-8"
        raise SourceError(f"is not valid {encoding} ({exc.reason if hasattr(exc, 'reason') else exc}); {hint}") from exc
    return SourceFile(path, text, encoding, bom, raw)


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise SourceError(f"cannot be read ({exc.strerror or exc}); check its permissions") from exc


def read(path: str, language: str) -> SourceFile:
    return decode(path, read_bytes(path), language)


def encode(source: SourceFile, new_text: str) -> bytes:
    data = new_text.encode(source.encoding)
    return codecs.BOM_UTF8 + data if source.bom else data


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data` in one rename: readers see the old file or the new one, never half of one."""
    directory = os.path.dirname(os.path.abspath(path))
    st = os.stat(path)
    fd, tmp = tempfile.mkstemp(prefix=".rlcompat-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
