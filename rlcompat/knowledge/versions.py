"""The one parser of release versions and of compute capabilities, for every knowledge table and its readers, and the
one writer of a capability.

    release("2.8.0+cu128") -> (2, 8, 0)      release("0.9.1.dev0") -> (0, 9, 1)      release("v0.20.0rc1") -> (0, 20, 0)
    local_tag("2.8.0+cu128") -> "cu128"      capability("7.5") -> (7, 5)          capability_text((7, 5)) -> "7.5"
"""

from __future__ import annotations

import re

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string, for ordering: its leading dotted numbers; () without any."""
    m = _RELEASE.match(version or "")
    return tuple(int(p) for p in m.group(1).split(".")) if m else ()


def local_tag(version: str) -> str | None:
    """The local version label: "2.8.0+cu128" -> "cu128"; None without one."""
    return version.split("+", 1)[1].lower() if "+" in version else None


def version_in(version: str, minimum: str, below: str) -> bool:
    """Whether `version`'s release is at least `minimum`'s and below `below`'s."""
    return release(minimum) <= release(version) < release(below)


def capability(text: str) -> tuple[int, int]:
    """A compute capability written "X.Y" (knowledge tables, machine snapshots) -> (X, Y)."""
    major, minor = text.split(".")
    return int(major), int(minor)


def capability_text(capability: tuple[int, int]) -> str:
    """A compute capability as messages and tables write it: (7, 5) -> "7.5" (what `capability` reads)."""
    return f"{capability[0]}.{capability[1]}"
