"""Which fixes one pass of `fix` takes: every fix whose edits overlap none already taken, in finding order."""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rlcompat.pipeline.fixer import _overlaps, _TakenEdits  # noqa: E402
from rlcompat.findings import Edit  # noqa: E402


def _take_naively(fixes: list[list[Edit]]) -> list[int]:
    taken: list[Edit] = []
    chosen = []
    for n, edits in enumerate(fixes):
        if all(not _overlaps(e, t) for e in edits for t in taken):
            taken.extend(edits)
            chosen.append(n)
    return chosen


def _take(fixes: list[list[Edit]]) -> list[int]:
    taken = _TakenEdits()
    chosen = []
    for n, edits in enumerate(fixes):
        if not any(taken.overlaps(e) for e in edits):
            taken.add(edits)
            chosen.append(n)
    return chosen


edit = st.tuples(st.integers(0, 60), st.integers(0, 8)).map(lambda p: Edit(p[0], p[0] + p[1], "x"))
# A fix's own edits never overlap each other (rules build them from distinct nodes).
fix = st.lists(edit, min_size=1, max_size=3).filter(
    lambda es: not any(_overlaps(a, b) for i, a in enumerate(es) for b in es[i + 1:]))


@settings(max_examples=400, deadline=None)
@given(st.lists(fix, max_size=30))
def test_sorted_selection_takes_what_checking_every_taken_edit_takes(fixes):
    assert _take(fixes) == _take_naively(fixes)


def test_insertions_and_touching_edits():
    fixes = [[Edit(5, 5, "a")], [Edit(5, 5, "b")], [Edit(5, 9, "c")], [Edit(0, 5, "d")], [Edit(9, 9, "e")]]
    assert _take(fixes) == _take_naively(fixes) == [0, 3, 4]
