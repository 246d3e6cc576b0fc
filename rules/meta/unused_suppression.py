from __future__ import annotations

from rlcompat.contract import ALL_LANGUAGES, Bad, Finding, Good, Location, Suppression, SuppressionRule

PREFIX, SILENCES_NOTHING = "suppression of ", " silences nothing"  # the message, which `still_holds` reads back


class UnusedSuppression(SuppressionRule):
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
    languages = ALL_LANGUAGES  # a suppression comment is read in a file of every language
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

    def check_suppressions(self, suppressions: list[Suppression], active_codes: set[str], path: str) -> list[Finding]:
        out = []
        for s in suppressions:
            if s.codes:
                stale = [c for c in s.codes if c not in s.used and any(a.startswith(c) for a in active_codes)
                         and not any(u.startswith(c) for u in s.used)]
            else:
                stale = [] if s.used else ["(all)"]
            if stale:
                out.append(Finding(
                    code=self.code,
                    name=self.name,
                    message=f"{PREFIX}{', '.join(stale)}{SILENCES_NOTHING} here for {self.target.name}; remove it",
                    path=path,
                    location=Location(s.line, s.column, s.line, s.column),
                    target=self.target.name,
                    severity=self.severity,
                ))
        return out

    def still_holds(self, finding: Finding, suppression: Suppression) -> bool:
        # Every code the finding named (its message says which) is one the suppression has silenced since.
        named = finding.message.removeprefix(PREFIX).split(SILENCES_NOTHING)[0].split(", ")
        return not all(n == "(all)" or any(u.startswith(n) for u in suppression.used) for n in named)
