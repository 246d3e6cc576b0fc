"""docs/troubleshooting.md, generated: each well-known error message -> the doctor rule that forestalls it -> what
to do. `python -m rlcompat.doctor.troubleshooting > docs/troubleshooting.md`; a test fails when the page is stale."""

from __future__ import annotations

import re

from rlcompat.knowledge.environment import environment_facts
from rlcompat.doctor.checks import environment_rules
from rlcompat.rules import file_rules
from rlcompat.knowledge.targets import sources


def markdown() -> str:
    errors = environment_facts()["errors"]
    rules = environment_rules()
    # Scan rules that name the error they prevent (declared environments, vLLM command lines) join the list.
    scan_rules = [r for r in file_rules() if getattr(r, "prevents", ())]
    table = sources()
    out = ["# Troubleshooting: error messages and the doctor findings that prevent them", "",
           "Generated from `rlcompat/knowledge/data/environment.toml`, the RLC5xx rules and the scan rules that name an error there by "
           "`python -m rlcompat.doctor.troubleshooting`; do not edit by hand.", "",
           "Paste the message you got into your browser's find box. `rlcompat doctor` (on the machine) or "
           "`rlcompat doctor --target sm61` (anywhere) reports the finding before the error happens; "
           "`rlcompat rule CODE` explains a rule. `{...}` marks a part that varies.", ""]
    for error_id, e in errors.items():
        preventing = [r for r in rules if error_id in r.prevents]
        declared = [r for r in scan_rules if error_id in r.prevents]
        preventing_any = preventing + declared
        if not preventing_any:
            continue
        out += [f"## {_heading(e['text'])}", "", "```text", e["text"], "```", ""]
        if e.get("also"):
            out += ["Also seen as:", "", "```text", e["also"], "```", ""]
        if e.get("note"):
            out += [f"Note: {e['note']}.", ""]
        for r in preventing:
            out.append(f"- **{r.code} {r.name}**: {r.title}.")
            example = _example_finding(r, error_id)
            if example is not None:
                out.append(f"  What to do (for example, on {example.target}): {example.remedy}")
        for r in declared:
            out.append(f"- **{r.code} {r.name}** (`rlcompat scan`, before anything is installed or run): {r.title}.")
        cited = sorted(set(e["sources"]), key=lambda s: int(s[1:]))
        out += ["", "Sources: " + "; ".join(f"[{s}] {table[s]}" for s in cited), ""]
    out += _precision_sections(table)
    out += ["## Errors from code rather than the installation", "",
            "bf16 dtypes, `attn_implementation=\"flash_attention_2\"`, unguarded `import flash_attn` and the other "
            "hazards written in source or configs are found by `rlcompat scan PATH --target sm61` "
            "(`rlcompat rules` lists those rules) and rewritten by `rlcompat fix`.", ""]
    return "\n".join(out)


def _precision_sections(table: dict[str, str]) -> list[str]:
    """Errors the precision rules (rlcompat/knowledge/data/precision.toml) prevent: found by `scan`, rewritten by `fix`."""
    from rlcompat.knowledge import precision
    from rlcompat.rules import file_rules

    by_code = {r.code: r for r in file_rules()}
    out = ["## Precision: errors the dtype rules prevent", "",
           "Found in code and configs by `rlcompat scan PATH --target sm70` and rewritten by `rlcompat fix` "
           "following the precision policy (docs/precision.md).", ""]
    for e in precision.errors().values():
        out += [f"### {_heading(e['text'])}", "", "```text", e["text"], "```", ""]
        if e.get("also"):
            out += ["Also seen as:", "", "```text", e["also"], "```", ""]
        for code in e["rules"]:
            r = by_code[code]
            targets = r.targets()
            where = f"{targets[0]} ... {targets[-1]}" if len(targets) > 1 else ", ".join(targets)
            out.append(f"- **{r.code} {r.name}** ({where}): {r.title}.")
        cited = sorted(set(e["sources"]), key=lambda s: int(s[1:]))
        out += ["", "Sources: " + "; ".join(f"[{s}] {table[s]}" for s in cited), ""]
    return out


def _example_finding(rule, error_id: str):
    """The finding of the rule's own Bad example that names this error (its remedy is real output)."""
    from rlcompat.doctor.snapshot import Environment
    from rlcompat.knowledge.targets import resolve_target

    found = [f for b in rule.bad for f in rule(resolve_target(b.target)).check(Environment.from_toml(b.code))]
    return next((f for f in found if f.error_id == error_id), found[0] if found else None)


def _heading(text: str) -> str:
    words = re.sub(r"\{[^}]*\}", "…", text).split()
    heading = ""
    for w in words:
        if len(heading) + len(w) > 80:
            return heading + " …"
        heading = f"{heading} {w}".strip()
    return heading


if __name__ == "__main__":
    import sys

    sys.stdout.write(markdown())
