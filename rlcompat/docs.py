"""Rule documentation generated from rule metadata (docs/rules/*.md; a test fails when they are stale)."""

from __future__ import annotations

from rlcompat.knowledge.targets import sources
from rlcompat.lang.languages import by_file_name


def rule_markdown(rule) -> str:
    lines = [f"# {rule.code} {rule.name}", "", rule.title, ""]
    lines += [f"Applies to: {', '.join(rule.targets()) or 'no target'}  ", f"Languages: {', '.join(sorted(rule.languages))}  ",
              f"Severity: {rule.severity}  ", f"Autofix: {'yes' if rule.has_fix() else 'no'}", ""]
    lines += ["## What it does", "", rule.what, "", "## Why is this bad?", "", rule.why, ""]
    bad = rule.bad[0] if rule.bad else None
    if bad is not None:
        lang = fence_of(bad.path)
        lines += ["## Example", "", f"On `{bad.target}`:", "", f"```{lang}", bad.code.rstrip("\n"), "```", ""]
        fixed = next((b for b in rule.bad if b.fixed is not None), None)
        if fixed is not None:
            lines += ["## Use instead", "", f"On `{fixed.target}`:", "", f"```{lang}", fixed.fixed.rstrip("\n"), "```", ""]
    lines += ["## Fix safety", "", rule.fix_safety, ""]
    if rule.sources:
        table = sources()
        lines += ["## Sources", ""] + [f"- [{s}] {table[s]}" for s in rule.sources] + [""]
    return "\n".join(lines)


def fence_of(path: str) -> str:
    """The code fence of an example file: its language's (`fence` in rlcompat/lang/languages.py)."""
    lang = by_file_name(path, explicit=True)
    return lang.fence if lang is not None else "bash"


def index_markdown(rules) -> str:
    lines = ["# Rules", "", "Generated from the rule catalog in `rules/` by `python -m rlcompat.docs`; do not edit by hand.", "",
             "| code | name | title | autofix |", "|---|---|---|---|"]
    for r in rules:
        title = r.title.replace("|", "\\|")
        lines.append(f"| [{r.code}]({r.code}.md) | {r.name} | {title} | {'yes' if r.has_fix() else 'no'} |")
    return "\n".join(lines) + "\n"


def generate(out_dir) -> list[str]:
    """Write docs/rules/; returns the paths written."""
    from pathlib import Path

    from rlcompat.rules import all_rules

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for r in all_rules():
        p = out / f"{r.code}.md"
        p.write_text(rule_markdown(r), encoding="utf-8")
        written.append(str(p))
    idx = out / "README.md"
    idx.write_text(index_markdown(all_rules()), encoding="utf-8")
    written.append(str(idx))
    return written


if __name__ == "__main__":
    import sys

    from rlcompat.pipeline import catalog

    for p in generate(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"):
        print(p)
    print(catalog.write())  # rules/index.py: what each rule declares, generated like these pages
