"""The one parser of release versions and of compute capabilities, for every knowledge table and its readers, and the
one writer of a capability.

    release("2.8.0+cu128") -> (2, 8, 0)      release("0.9.1.dev0") -> (0, 9, 1)      release("v0.20.0rc1") -> (0, 20, 0)
    local_tag("2.8.0+cu128") -> "cu128"      capability("7.5") -> (7, 5)          capability_text((7, 5)) -> "7.5"
    satisfies("0.9.2", ">=0.8.5,<=0.12.0") -> True     allows_between(">=0.11", "0.8.0", "0.10.1") -> False
"""

from __future__ import annotations

import re

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_CLAUSE = re.compile(r"(==|!=|<=|>=|<|>|~=)\s*([\w.]+)")  # one clause of a requirement's specifier


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


def satisfies(version: str, spec: str) -> bool | None:
    """Whether `version` meets every clause of `spec` (`>=0.6,<0.8`); None where a clause is not one compared here.
    Releases compare padded with zeros, as PEP 440 does (0.9 == 0.9.0)."""
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        m = _CLAUSE.fullmatch(clause)
        if m is None or "*" in clause:
            return None
        op, want = m.group(1), release(m.group(2))
        have, want = _padded(release(version), want)
        ok = {"==": have == want, "!=": have != want, "<=": have <= want, ">=": have >= want, "<": have < want,
              ">": have > want, "~=": have >= want and have[:max(len(want) - 1, 1)] == want[:max(len(want) - 1, 1)]}[op]
        if not ok:
            return False
    return True


def _padded(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)), b + (0,) * (width - len(b))


def allows_between(spec: str, first: str, last: str) -> bool | None:
    """Whether a requirement's `spec` allows some version from `first` to `last` (both included); None where a clause
    is not one `satisfies` compares. What a spec allows inside the span starts at `first`, at one of its bounds, or
    just above one (`>0.9`, `!=0.9`: 0.9.0.1), so those versions, where inside the span, are the ones tried."""
    span = (release(first), release(last))
    tried = [first, last]
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        m = _CLAUSE.fullmatch(clause)
        if m is None or "*" in clause:
            return None
        tried += [m.group(2), m.group(2) + ".0.0.0.1"]
    return any(_inside(version, *span) and satisfies(version, spec) for version in tried)


def _inside(version: str, low: tuple[int, ...], high: tuple[int, ...]) -> bool:
    have, low = _padded(release(version), low)
    have, high = _padded(have, high)
    return low <= have <= high


def capability(text: str) -> tuple[int, int]:
    """A compute capability written "X.Y" (knowledge tables, machine snapshots) -> (X, Y)."""
    major, minor = text.split(".")
    return int(major), int(minor)


def capability_text(capability: tuple[int, int]) -> str:
    """A compute capability as messages and tables write it: (7, 5) -> "7.5" (what `capability` reads)."""
    return f"{capability[0]}.{capability[1]}"
