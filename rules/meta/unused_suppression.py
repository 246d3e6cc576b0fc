from __future__ import annotations

from rlcompat.rule import Bad, Good, Rule


class UnusedSuppression(Rule):
    code = "RLC001"
    name = "unused-suppression"
    title = "`# rlcompat: ignore[...]` comment that suppresses nothing"
    what = (
        "Reports an inline suppression, or a code in one, that silenced no finding in this run. Codes of rules that "
        "do not apply to the target or are not selected are not reported, so a comment written for sm61 is not "
        "flagged by a scan for sm90."
    )
    why = (
        "A stale suppression hides the next real hazard on that line. Keeping them honest keeps the gate honest."
    )
    fix_safety = "No autofix; delete the comment or the code."
    languages = frozenset({"python", "yaml", "shell"})
    severity = "warning"
    examples_select = ("ALL",)

    bad = (
        Bad("x = 1  # rlcompat: ignore[RLC101]\n"),
    )
    good = (
        Good("import torch\nx = t.to(torch.bfloat16)  # rlcompat: ignore[RLC101]\n"),
        Good("x = 1  # rlcompat: ignore[RLC101]\n", target="sm90"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True
