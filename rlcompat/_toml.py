"""TOML reading: tomllib from Python 3.11, tomli before; rlcompat's own knowledge files through tomli where it is
installed (its wheels are compiled, 2.4x faster than tomllib, the same parser in pure Python)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as _toml

TOMLDecodeError = _toml.TOMLDecodeError


def load_toml_text(text: str) -> dict:
    return _toml.loads(text)


try:
    import tomli as _compiled
except ImportError:  # pragma: no cover - a source install without its dependencies
    _compiled = _toml

# The files a user scans and configures with keep the standard parser (its errors are what reports quote); the
# knowledge files, parsed the same by both (tests/test_knowledge_files.py), are a tenth of a one-file scan.
KNOWLEDGE_ERRORS = (TOMLDecodeError, _compiled.TOMLDecodeError)


def load_knowledge_text(text: str) -> dict:
    return _compiled.loads(text)
