"""Big modules parsed by LibCST a few statements at a time, each part dropped before the next is parsed.

LibCST's tree costs several hundred bytes of memory per byte of source (a 292 KB file of 10,000 one-line
statements: about 260 MB), so a file parsed whole decides a run's peak memory. A text longer than
`SPLIT_MIN_CHARS` is cut between its top-level statements (CPython's `ast`, in C, says where each one starts and
ends) into parts of about `PART_CHARS`; the Python front end parses, walks and locates one part at a time
(`lang/python.py`), so what is alive at once is one part's tree, never the whole file's. A statement is never cut:
one bigger than a part is a part of its own.

Rules see a node, its ancestors and the imports before it (the narrowing relies on the same, and
tests/test_narrowing_safety.py holds every rule to it); the imports are carried from part to part by the walk's
context, so a part's module instead of the whole one changes nothing a rule reads. A rule that reads the whole
module (`Rule.whole_module`) gets the whole module where it can match (`reads_whole_module`, and the narrowing).
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Callable, Sequence

from rlcompat.lang.pyspeed import plain
from rlcompat.lang.pyspeed.chunks import split_lines

PART_CHARS = 32_000  # about 20-30 MB of LibCST tree a part
SPLIT_MIN_CHARS = 2 * PART_CHARS  # shorter texts are parsed whole: at most two parts' worth of tree


@dataclass(frozen=True)
class Part:
    text: str  # whole lines of the text: top-level statements and the blank and comment lines before them
    first_line: int  # the 1-based line of the whole text this part starts on


@dataclass(frozen=True)
class Parts:
    """A module's text in parts to be parsed one after the other (what `lang/python.parse` gives for a big text)."""

    text: str
    parts: tuple[Part, ...]


Plan = tuple[str, list[tuple[int, int]]]  # a narrowed text and its top-level statements' lines (`plan_narrowed`)


def split(text: str, spans_of: Callable[[str], list[tuple[int, int]] | None], planned: Plan | None = None) -> Parts | None:
    """`text` cut into parts between top-level statements, or None when it is to be parsed whole: short, plain
    mode, not parsed by CPython (LibCST then reports the error as before), or no place to cut. Where the top-level
    statements are: from `planned` if it is the plan of `text` (`plan_narrowed`), else `spans_of(text)` ((first
    line, last line) of each: `chunks.spans_of`, what the narrowing step's pass over the same text learnt)."""
    if plain() or len(text) < SPLIT_MIN_CHARS:
        return None
    if planned is not None and planned[0] is text:
        spans = planned[1]
    else:
        spans = spans_of(text) or []
    if len(spans) < 2:
        return None
    lines = split_lines(text)  # the lines CPython numbers: ended by \r\n, \r or \n only
    cuts = _cuts(spans, lines)
    if not cuts:
        return None
    bounds = [0, *cuts, len(lines)]
    return Parts(text, tuple(Part("".join(lines[a:b]), a + 1) for a, b in zip(bounds, bounds[1:])))


def plan_narrowed(narrowed_text: str, kept_lines: Sequence[int], spans: list[tuple[int, int]]) -> Plan | None:
    """Where the top-level statements of a narrowed text are, from those of the original text (`spans`, their first
    and last lines; `kept_lines`: the original line of each line of `narrowed_text`, in order), for `split` to cut
    it without parsing it again (None: it will not be cut). The narrowing keeps or leaves out whole top-level
    statements, and a kept one keeps its first line at column 0 and no line of another, so its lines are the kept
    lines between its own first and last."""
    if plain() or len(narrowed_text) < SPLIT_MIN_CHARS:
        return None
    planned = []
    for start, end in spans:
        first, last = bisect.bisect_left(kept_lines, start), bisect.bisect_right(kept_lines, end) - 1
        if first <= last:
            planned.append((first + 1, last + 1))
    return narrowed_text, planned


def _cuts(spans: list[tuple[int, int]], lines: list[str]) -> list[int]:
    """0-based line indices where a new part starts: right after a statement's last line, when the part so far
    holds `PART_CHARS` or more, the next statement starts on a later line (not `a = 1; b = 2`) and the last line
    does not go on with a backslash."""
    offsets = list(itertools.accumulate(map(len, lines), initial=0))  # of each line's start
    cuts: list[int] = []
    start = 0  # 0-based first line of the current part
    for (_, end), (next_start, _) in zip(spans, spans[1:]):
        if offsets[end] - offsets[start] >= PART_CHARS and next_start > end \
                and not lines[end - 1].rstrip("\r\n").endswith("\\"):
            cuts.append(end)
            start = end
    return cuts


def reads_whole_module(rules: Sequence, text: str) -> bool:
    """Whether a rule may read beyond a node's ancestors in this file, so the module must be parsed whole: a
    `whole_module` rule, unless it reads only functions decorated from modules `text` never names (the Triton
    model: a file without `triton` has no kernel). Asked only of a text that was not narrowed: `narrow` leaves a
    text whole where such a rule can match, asking the finer question on the tree."""
    return any(getattr(r, "whole_module", False) and (
        not getattr(r, "whole_module_for_decorators_from", ()) or any(m in text for m in r.whole_module_for_decorators_from))
        for r in rules)
