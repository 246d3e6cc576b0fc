"""TOML reading: tomllib from Python 3.11, tomli before."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as _toml

TOMLDecodeError = _toml.TOMLDecodeError


def load_toml_text(text: str) -> dict:
    return _toml.loads(text)
