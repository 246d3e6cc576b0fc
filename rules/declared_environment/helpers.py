"""What the declared-environment rules (RLC6xx) share: how a requirement's version specifier reads against the tables
doctor reads too (rlcompat.knowledge.torch_wheels, rlcompat.knowledge.capabilities): which torch release a specifier
installs, the torch an exact pin of another package brings, and the minimum capability of the release a specifier
installs. Nothing here restates a fact."""

from __future__ import annotations

import re

from rlcompat.knowledge import torch_wheels
from rlcompat.knowledge.capabilities import MinCapability, min_capability
from rlcompat.knowledge.versions import release

CLAUSE = re.compile(r"^\s*(===|==|!=|~=|>=|<=|>|<|=)?\s*([0-9][\w.*+!-]*)\s*$")


def chosen_torch(spec: str, index_tag: str | None = None) -> str | None:
    """The torch release pip installs for a specifier: the newest known minor release it allows ("2.8" for
    "<2.9", the newest line for ""); from an index that builds only some releases (`index_tag`: uv's routed cu128
    index, whose last torch is 2.11), the newest of those. A `+cuXXX` local tag is kept ("2.8.0+cu128"). None when
    no known release satisfies it, or the specifier cannot be read."""
    spec = spec.strip()
    lines = [line for line in torch_wheels.torch_releases()
             if index_tag is None or torch_wheels.variant(".".join(map(str, line)), index_tag) is not None]
    if not lines:
        return None
    if not spec:
        return ".".join(map(str, lines[-1]))
    clauses = [c for c in spec.split(",") if c.strip()]
    parsed = []
    for c in clauses:
        m = CLAUSE.match(c)
        if not m:
            return None
        parsed.append((m.group(1) or "==", m.group(2)))
    exact = [v for op, v in parsed if op in ("==", "===", "=") and "*" not in v]
    if exact:
        return exact[0]
    for line in reversed(lines):
        if all(_allows(op, v, line) for op, v in parsed):
            return ".".join(map(str, line))
    return None


def _allows(op: str, version: str, line: tuple[int, int]) -> bool:
    wanted = release(version.replace("*", "0"))
    if not wanted:
        return False
    # Compare a minor line with the bound at the bound's precision ("<2.9" excludes 2.9.x; "<2.9.1" allows 2.9).
    candidate = line + (0,) * max(0, len(wanted) - 2)
    if op in ("==", "=") and "*" in version:  # "==2.8.*"
        prefix = release(version.replace(".*", ""))
        return candidate[: len(prefix)] == prefix
    if op in ("==", "===", "="):
        return candidate[:2] == wanted[:2]
    if op == "!=":
        return True
    if op == "~=":
        return candidate >= wanted and candidate[: len(wanted) - 1] == wanted[: len(wanted) - 1]
    if op == ">=":
        return candidate >= wanted or candidate[:2] == wanted[:2]
    if op == ">":
        return candidate > wanted or (candidate[:2] == wanted[:2] and len(wanted) > 2)
    if op == "<=":
        return candidate <= wanted
    if op == "<":
        return candidate < wanted
    return False


def torch_required_by(name: str, spec: str, extras: tuple[str, ...] = (),
                      held: dict[str, str] | None = None) -> torch_wheels.TorchRequirement | None:
    """The known torch requirement of the release a requirement installs: for an exact pin (`vllm==0.11.0`), or an
    upper bound `<=X` (pip installs the newest allowed release, X itself: releases are immutable, and `<=0.6.3`
    excludes 0.6.3.post1, PEP 440), of a release the table knows; for a requirement without an upper bound
    (`torchvision`, `torchaudio>=2.0`), the package's newest release where the table has it (`newest = true`); any
    other range is not resolved (the newest release it allows is not known here). A row for one of the package's extras applies only when the requirement
    names that extra. `held`: the newest release another exact pin of the same install leaves a package
    (`held_releases`); a requirement without an upper bound installs that release instead of the newest."""
    m = CLAUSE.match(spec) if "," not in spec else None
    cap = _inclusive_cap(spec)
    if m is not None and m.group(1) in ("==", "===", "<="):
        # a wheel's local tag (`vllm==0.24.0+cu129`, a release wheel a uv source names) is the same release
        exact = m.group(2).split("+", 1)[0]
        rows = [r for r in torch_wheels.torch_requirements() if r.package == name and r.release == exact]
    elif cap is not None:
        rows = [r for r in torch_wheels.torch_requirements() if r.package == name and r.release == cap]
    elif _lower_bounds_only(spec) and held and name in held:
        # another exact pin of the install holds the package back: pip installs the newest release it leaves
        rows = [r for r in torch_wheels.torch_requirements() if r.package == name and r.release == held[name]
                and minor_line_meets(r.release, spec)]
    elif _lower_bounds_only(spec):
        # no upper bound: pip installs the newest release, if the table knows it and the bounds allow it
        rows = [r for r in torch_wheels.torch_requirements() if r.package == name and r.newest
                and all(_allows(op, v, release(r.release)[:2]) for op, v in _clauses(spec))]
    else:
        return None
    return next((r for r in rows if r.extra and r.extra in extras), None) or next((r for r in rows if not r.extra), None)


def release_pinning(name: str, spec: str, torch_pin: str) -> torch_wheels.TorchRequirement | None:
    """Beside an exact torch pin (`torch==2.9`), a package whose releases each pin one torch (vLLM) installs a release
    that pins that torch: pip backtracks from the newest release the specifier allows (`vllm>0.8.5.post1`: 0.33.0,
    torch 2.14.0) to one whose pin the torch pin meets. The newest such row the table knows within `spec` (vllm
    0.13.0 for torch 2.9.0); whichever release pip takes, it installs that torch. None where the table knows none (pip
    may find one the table lacks, or refuse the pair: either way no torch is known), or for a wildcard torch pin."""
    if "*" in torch_pin or "," in torch_pin:
        return None
    wanted = _key(release(torch_pin.split("+", 1)[0]))
    rows = [r for r in torch_wheels.torch_requirements()
            if r.package == name and not r.extra and r.torch and not r.torch_is_bound
            and _key(release(r.torch)) == wanted and _within(r.release, spec)]
    return max(rows, key=lambda r: _key(release(r.release)), default=None)


def _within(version: str, spec: str) -> bool:
    """Whether a release meets every clause of a specifier (its numeric release; `!=` of that release excludes it)."""
    bounds = _spec_bounds(spec.strip()) if spec.strip() else (None, None)
    if bounds is None:
        return False
    r = release(version)
    if any(op == "!=" and _key(release(v)) == _key(r) for op, v in _clauses(spec)):
        return False
    return _overlap(bounds, ((r, True), (r, True)))


def _inclusive_cap(spec: str) -> str | None:
    """`>=0.22.0,<=0.31.0`: pip installs the cap itself where the other clauses are lower bounds it meets (releases
    are immutable; `!=` of another release does not matter). None for any other specifier."""
    clauses = _clauses(spec)
    caps = [v for op, v in clauses if op == "<="]
    if len(clauses) < 2 or len(caps) != 1:
        return None
    cap = caps[0]
    for op, v in clauses:
        if op == "!=" and v == cap:
            return None
        if op not in (">=", ">", "!=", "<="):
            return None
        if op in (">=", ">") and not (release(cap) > release(v) or (op == ">=" and release(cap) == release(v))):
            return None
    return cap


def _clauses(spec: str) -> list[tuple[str, str]]:
    out = []
    for c in (c for c in spec.split(",") if c.strip()):
        m = CLAUSE.match(c)
        if m is None:
            return []
        out.append((m.group(1) or "==", m.group(2)))
    return out


def _lower_bounds_only(spec: str) -> bool:
    """`""`, `>=2.0`, `>0.20,!=0.21.0`: nothing caps the release pip picks (an unreadable specifier is not)."""
    if not spec.strip():
        return True
    clauses = _clauses(spec)
    return bool(clauses) and all(op in (">=", ">", "!=") for op, _ in clauses)


def caps_torch(spec: str) -> bool:
    """Whether a torch specifier holds torch below some release (an exact pin or an upper bound): pip then picks an
    older release of a package that asks for a newer torch, rather than replacing this one."""
    return not _lower_bounds_only(spec)


def torch_cap_of_others(requirements, extra: str = "") -> tuple[str, str] | None:
    """(a torch specifier with an upper bound, the requirement that asks for it) where another requirement of the same
    install installs a release whose torch requirement is a range with a cap (`colossalai>=0.4.7`: its newest release
    asks for `torch>=2.2.0,<=2.5.1`, `[[requires_torch]]`): pip then keeps torch within it, so a lower-bound-only
    torch requirement beside it resolves under the cap, not to the newest torch. None where no such requirement is
    known."""
    for req in requirements:
        if req.name == "torch" or req.extra not in ("", extra) or req.uv_only or not req.version_known:
            continue
        pin = torch_required_by(req.name, req.spec, req.extras)
        if pin is not None and pin.torch_is_bound and any(op in ("<", "<=", "==") for op, _ in _clauses(pin.torch)):
            return pin.torch, f"{req.name}{req.spec}"
    return None


def asks_any_torch(name: str) -> bool:
    """Whether every release of `name` rlcompat/knowledge/data/torch_wheels.toml `[[requires_torch]]` knows asks for any
    torch (flash-attn: `Requires-Dist: torch`): installing one keeps the machine's torch whichever release it is."""
    rows = [r for r in torch_wheels.torch_requirements() if r.package == name]
    return bool(rows) and all(not r.torch for r in rows)


def pins_torch_exactly(name: str) -> bool:
    """Whether every release of `name` rlcompat/knowledge/data/torch_wheels.toml `[[requires_torch]]` knows (outside
    its extras) pins one torch release (`vllm`: `Requires-Dist: torch==X` in each): an exact pin of a release the
    table lacks then holds torch at some release too, one this table cannot name."""
    rows = [r for r in torch_wheels.torch_requirements() if r.package == name and not r.extra]
    return bool(rows) and all(r.torch and not r.torch_is_bound for r in rows)


# --- a package's minimum for the release a specifier installs -----------------------------------------------------

Bound = tuple[tuple[int, ...], bool]  # (release, inclusive)


def _key(r: tuple[int, ...]) -> tuple[int, ...]:
    return r + (0,) * max(0, 4 - len(r))


def _bump(r: tuple[int, ...]) -> tuple[int, ...]:
    """The first release after every release starting with `r`: (0, 19) -> (0, 20)."""
    return r[:-1] + (r[-1] + 1,)


def _spec_bounds(spec: str) -> tuple[Bound | None, Bound | None] | None:
    """The releases a specifier allows as (lowest, highest) bounds, None for unbounded; None when unreadable."""
    low: Bound | None = None
    high: Bound | None = None

    def tighter_low(b: Bound) -> None:
        nonlocal low
        if low is None or _key(b[0]) > _key(low[0]) or (_key(b[0]) == _key(low[0]) and not b[1]):
            low = b

    def tighter_high(b: Bound) -> None:
        nonlocal high
        if high is None or _key(b[0]) < _key(high[0]) or (_key(b[0]) == _key(high[0]) and not b[1]):
            high = b

    for clause in (c for c in spec.split(",") if c.strip()):
        m = CLAUSE.match(clause)
        if not m:
            return None
        op, text = m.group(1) or "==", m.group(2)
        if op == "!=":
            continue
        r = release(text.replace(".*", ""))
        if not r:
            return None
        if op in ("==", "===", "=", "~="):
            tighter_low((r, True))
            if "*" in text:  # "==0.19.*": below 0.20
                tighter_high((_bump(r), False))
            elif op == "~=":  # "~=0.19.0": below 0.20
                tighter_high((_bump(r[:-1]) if len(r) > 1 else (r[0] + 1,), False))
            else:
                tighter_high((r, True))
        elif op in (">=", ">"):
            tighter_low((r, op == ">="))
        else:
            tighter_high((r, op == "<="))
    return low, high


def _overlap(a: tuple[Bound | None, Bound | None], b: tuple[Bound | None, Bound | None]) -> bool:
    lows = [x for x in (a[0], b[0]) if x is not None]
    highs = [x for x in (a[1], b[1]) if x is not None]
    if not lows or not highs:
        return True
    low = max(lows, key=lambda x: (_key(x[0]), not x[1]))
    high = min(highs, key=lambda x: (_key(x[0]), x[1]))
    return _key(low[0]) < _key(high[0]) or (_key(low[0]) == _key(high[0]) and low[1] and high[1])


def allows_only_below(spec: str, version: str) -> bool:
    """Whether every release a specifier allows is below `version` (`==1.0.7`, `<2`: below 2.0.0); False for a
    bare, open-ended or unreadable specifier."""
    bounds = _spec_bounds(spec.strip()) if spec.strip() else None
    return bounds is not None and not _overlap(bounds, ((release(version), True), None))


def minimum_installed(row_name: str, spec: str) -> MinCapability:
    """The minimum capability (rlcompat/knowledge/data/capabilities.toml) of the release pip installs for a specifier, its newest
    allowed: where the row's minimum changed between releases ("vllm": 7.0 up to 0.19.1, 7.5 from 0.20.0),
    `vllm==0.10.2` and `vllm<0.20` get the older one, `vllm>=0.8` and an unreadable specifier the current one."""
    row = min_capability(row_name)
    bounds = _spec_bounds(spec.strip()) if row.earlier else None
    if bounds is None:
        return row
    ranges = [((release(row.since), True), None, row.since)]
    for i in reversed(range(len(row.earlier))):
        below = (release(row.earlier[i - 1].through), False) if i else None
        ranges.append((below, (release(row.earlier[i].through), True), row.earlier[i].through))
    for low, high, through in ranges:
        if _overlap(bounds, (low, high)):
            return min_capability(row_name, through)
    return row


def held_releases(requirements, extra: str = "") -> dict[str, str]:
    """{package: the newest release of it the install's exact pins leave} (rlcompat/knowledge/data/torch_wheels.toml
    `[[holds_back]]`), from the requirements pip reads for the core install and, where given, one extra."""
    out: dict[str, str] = {}
    for req in requirements:
        if req.extra not in ("", extra) or getattr(req, "uv_only", False) or not req.spec.startswith("=="):
            continue
        exact = req.spec.lstrip("=").split("+", 1)[0].strip()
        for row in torch_wheels.held_back():
            if row.package == req.name and row.release == exact:
                out[row.holds] = min(out.get(row.holds, row.newest), row.newest, key=release)
    return out


def minor_line_meets(version: str, spec: str) -> bool:
    """Whether the minor line of a torch release (2.7 of 2.7.1) meets a specifier, each bound compared at its own
    precision (`2.7.0` meets `>=2.5.1`, 2.9.x fails `<2.9`; every release meets ""). Exact releases compare with
    rlcompat.knowledge.versions.satisfies."""
    return all(_allows(op, v, release(version)[:2]) for op, v in _clauses(spec))

