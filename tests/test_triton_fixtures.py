"""Realistic Triton kernels under fixtures/triton/<case>/: scan on the case's target, fix, compare with the
golden expected.py, and check the fix is idempotent and leaves nothing fixable."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat._toml import load_toml_text
from rlcompat.config import Options
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.fixer import fix_source
from rlcompat.knowledge.identity import pinned
from rlcompat.pipeline.source import decode
from rlcompat.knowledge.targets import resolve_target

CASES = sorted(p for p in (Path(__file__).resolve().parents[1] / "fixtures" / "triton").iterdir() if p.is_dir())


def _fix(case: Path, text: str):
    meta = load_toml_text((case / "case.toml").read_text())
    checker = Checker(resolve_target(meta["target"]), Options(select=("RLC3",)), identity=pinned(meta.get("frameworks")))
    source = decode(str(case / "input.py"), text.encode(), "python")
    return checker, fix_source(checker, source, "python", unsafe=meta.get("unsafe", False))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fixture_is_fixed_to_golden(case):
    original = (case / "input.py").read_text()
    expected = (case / "expected.py").read_text()
    checker, outcome = _fix(case, original)
    assert outcome.fixed == expected
    _, again = _fix(case, outcome.fixed)
    assert again.fixed == outcome.fixed, "fix is not idempotent"
    assert not [f for f in again.remaining.findings if f.fix is not None], "fixable findings left after fixing"


def test_fixtures_cover_each_kernel_style():
    names = {c.name for c in CASES}
    assert {"matmul_autotune", "fused_cross_entropy", "row_sum_atomic", "pipelined_matmul"} <= names
