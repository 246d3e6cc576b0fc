"""Two findings whose fixes make the same change are both fixed by it, and counted as fixed."""

from __future__ import annotations

from rlcompat.pipeline.fixer import fix_source
from rlcompat.findings import Edit, FileResult, Finding, Fix, FixSafety, Location
from rlcompat.pipeline.source import decode

TEXT = "dtype: bfloat16\nother: 1\n"


class _TwoRulesOneEdit:
    """Reports the value twice (as two rules might, each with its own reason) with the identical rewrite, until
    it is gone."""

    def check_source(self, source, language):
        found = []
        start = source.text.find("bfloat16")
        if start >= 0:
            fix = Fix((Edit(start, start + len("bfloat16"), "float32"),), FixSafety.SAFE, "use float32")
            loc = Location(1, start + 1, 1, start + 9)
            found = [Finding(code, code.lower(), "bf16 on sm61", source.path, loc, "sm61", fix=fix)
                     for code in ("RLC104", "RLC003")]
        return FileResult(source.path, language, findings=found)


def test_identical_edits_fix_both_findings_once():
    source = decode("c.yaml", TEXT.encode(), "yaml")
    outcome = fix_source(_TwoRulesOneEdit(), source, "yaml", unsafe=False)
    assert outcome.fixed == "dtype: float32\nother: 1\n"
    assert sorted(f.code for f in outcome.applied) == ["RLC003", "RLC104"]
    assert outcome.remaining.findings == []
