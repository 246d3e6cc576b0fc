"""The compatibility matrix: targets x rule families, with a verdict per target, as text or JSON.

A finding counts as a note when its severity is below error (findings.SEVERITIES: slow, fragile or stale, it does
not stop a run; `scan --fail-on error` passes on such findings too); otherwise as a blocker (no autofix), fixable (a
safe fix) or unsafe-fixable (a fix that needs --unsafe-fixes).
A verdict is per run (rlcompat/analysis/run_scope.py): the cells and the verdict count the findings of the run judged (the
framework's default run unless `--run` names another); findings only another run reaches are counted apart and named
on the lines below the verdict (`scope`), with the rollout the run selects where no engine the framework registers
runs on the target.
The JSON schema is documented in docs/output-formats.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from rlcompat.analysis import run_scope
from rlcompat.release import __version__
from rlcompat.rules.codes import CODES, REPORT_NAMES
from rlcompat.findings import FileError, Finding, FixSafety, at_least
from rlcompat.knowledge.targets import Target
from rlcompat.knowledge.verl_config import RunOption



def report_families(codes: dict[str, str], names: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """(code prefix, name) of each family that checks files, from the code registry (rules/codes.py): a family is a
    package whose codes share their first four characters (`RLC1` for RLC1xx)."""
    out = []
    for family, name in names.items():
        prefixes = {code[:4] for code, location in codes.items() if location.split(".")[0] == family}
        if len(prefixes) != 1:
            raise ValueError(f"rules/codes.py: family {family!r} has codes under {sorted(prefixes) or 'no'} prefix")
        out.append((prefixes.pop(), name))
    return tuple(out)


FAMILIES = report_families(CODES, REPORT_NAMES)
KINDS = ("blockers", "fixable", "unsafe_fixable", "notes")

RUNS, RUNS_AFTER_FIX, RUNS_AFTER_UNSAFE_FIX, BLOCKED = "runs", "runs_after_fix", "runs_after_unsafe_fix", "blocked"


def family_of(code: str) -> str:
    return next((name for prefix, name in FAMILIES if code.startswith(prefix)), "other")


def kind_of(f: Finding) -> str:
    if not at_least(f.severity, "error"):
        return "notes"
    if f.fix is None:
        return "blockers"
    return "fixable" if f.fix.safety is FixSafety.SAFE else "unsafe_fixable"


@dataclass
class TargetRow:
    target: Target
    cells: dict[str, dict[str, int]]  # family -> kind -> count, of the findings in the run judged
    status: str
    verdict: str  # one short line: the verdict and the rule codes that decide it
    first_blocker: Finding | None
    suppressed: int = 0
    deciding: list[Finding] = field(default_factory=list)  # the blockers, else what `fix` must change; path order
    # The findings only another run reaches, by the option that selects that run (its `[[run_option]]` row).
    other_runs: dict[RunOption, list[Finding]] = field(default_factory=dict)
    rollout: str = ""  # where no engine the checked verl registers runs on the target: what the run selects instead
    scope: str = ""  # which run the verdict is for, what decides it, and what only other runs reach (a detail line)
    not_reached: list = field(default_factory=list)  # `--run LAUNCH.sh`: (finding, NotReached) the run does not reach

    @property
    def totals(self) -> dict[str, int]:
        return {k: sum(c[k] for c in self.cells.values()) for k in KINDS}


@dataclass
class Matrix:
    rows: list[TargetRow]
    files: int
    errors: list[FileError] = field(default_factory=list)
    run: str = run_scope.DEFAULT

    @property
    def all_run(self) -> bool:
        return all(r.status == RUNS for r in self.rows) and not self.errors


def build(run, unsafe_fixes: bool = False, run_name: str = run_scope.DEFAULT, launch=None) -> Matrix:
    """The matrix of a `rlcompat.pipeline.matrix.MatrixRun`. With `unsafe_fixes` (configured), plain `fix` applies unsafe fixes.
    `run_name`: the run judged (run_scope.DEFAULT, run_scope.ALL or a `[[run_option]]` name); `launch`: the run of a
    launch script (rlcompat/analysis/run_model.Run), which then decides what is in the run instead."""
    rows = []
    package = run_scope.package_knowledge(run.files)  # a verl package checked: its default run and rollout
    for i, target in enumerate(run.targets):
        findings, other_runs, outside = [], {}, []
        for f in sorted(run.findings(i), key=Finding.sort_key):
            if launch is not None:
                why = launch.classify(f)
                (findings.append(f) if why is None else outside.append((f, why)))
                continue
            inside, option = run_scope.in_run(f.path, run_name)
            if inside:
                findings.append(f)
            else:
                other_runs.setdefault(option, []).append(f)
        cells = {name: dict.fromkeys(KINDS, 0) for _, name in FAMILIES}
        for f in findings:
            cells[family_of(f.code)][kind_of(f)] += 1
        blockers = [f for f in findings if kind_of(f) == "blockers"]
        to_fix = [f for f in findings if kind_of(f) in ("fixable", "unsafe_fixable")]
        if blockers:
            status, deciding = BLOCKED, blockers
            verdict = f"blocked by {_count(len(blockers), 'blocker')}: {_codes(blockers)}"
        elif to_fix:
            unsafe = any(kind_of(f) == "unsafe_fixable" for f in to_fix)
            status, deciding = (RUNS_AFTER_UNSAFE_FIX if unsafe else RUNS_AFTER_FIX), to_fix
            command = "rlcompat fix --unsafe-fixes" if unsafe and not unsafe_fixes else "rlcompat fix"
            verdict = f"runs after `{command}` ({_count(len(to_fix), 'fix', 'fixes')}: {_codes(to_fix)})"
        else:
            status, deciding, verdict = RUNS, [], "runs"
        rows.append(TargetRow(target, cells, status, verdict, blockers[0] if blockers else None, run.suppressed[i],
                              deciding, other_runs, _rollout(package, target),
                              _launch_scope(deciding, outside, launch) if launch is not None
                              else _scope_text(deciding, other_runs, run_name, package), outside))
    return Matrix(rows, len(run.files), run.errors, launch.label if launch is not None else run_name)


def _launch_scope(deciding: list[Finding], outside: list, launch) -> str:
    from rlcompat.analysis.run_model import Split, not_reached_line

    decided = f"decided by {', '.join(rule_codes(deciding))}" if deciding else "no finding it reaches"
    rest = not_reached_line(Split(deciding, outside)).removeprefix("Not reached by this run: ").rstrip(".")
    return f"run of {launch.label} ({launch.entry}), {decided}" + (f"; not reached: {rest}" if rest else "")


def _rollout(package, target) -> str:
    """Where no rollout engine the checked verl package registers runs on the target, what its run selects instead:
    rlcompat's hf rollout (rlcompat/knowledge/hf_rollout.py: what RLC401's fix and doctor say)."""
    from rlcompat.knowledge import hf_rollout

    if package is None or not hf_rollout.needed(package, target):
        return ""
    if not hf_rollout.supports(package):
        return (f"no engine {package.label} registers runs on {target.name} and rlcompat's hf rollout supports verl "
                f"{', '.join(hf_rollout.SUPPORTED_VERL)} only")
    return hf_rollout.advice(package, hf_rollout.installed())


def _scope_text(deciding: list[Finding], other_runs: dict, run_name: str, package) -> str:
    """What decides a verdict and what it leaves out, said only where a run option set something apart."""
    if not other_runs:
        return ""
    which = f"{run_name} run"
    if run_name == run_scope.DEFAULT:
        which = f"default run ({package.default_run})" if package is not None and package.default_run else "default run"
    decided = f"decided by {', '.join(rule_codes(deciding))}" if deciding else "no finding"
    apart = []
    for option, fs in other_runs.items():
        blockers = [f for f in fs if kind_of(f) == "blockers"]
        codes = ", ".join(rule_codes(blockers))
        apart.append(f"{len(fs)} --run {option.name}" + (f" (blocked by {codes})" if blockers else ""))
    return f"{which}, {decided}; not in it: {', '.join(apart)}"


SHOWN_CODES = 3  # rule codes a verdict names, so that it stays one short line; the rest are counted
SHOWN_DETAILS = 5  # blockers listed under a verdict in the text report; JSON lists them all


def rule_codes(findings: list[Finding]) -> list[str]:
    """The rule codes of `findings`, each once, in order."""
    return sorted({f.code for f in findings})


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _codes(findings: list[Finding]) -> str:
    """`RLC101 x10, RLC201`: the rules of `findings`, most findings first, at most SHOWN_CODES of them."""
    from collections import Counter

    counts = sorted(Counter(f.code for f in findings).items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [code if n == 1 else f"{code} x{n}" for code, n in counts[:SHOWN_CODES]]
    if len(counts) > SHOWN_CODES:
        shown.append(f"{_count(len(counts) - SHOWN_CODES, 'more rule')}")
    return ", ".join(shown)


def _cell(counts: dict[str, int]) -> str:
    if not any(counts.values()):
        return "."
    return "/".join(str(counts[k]) if counts[k] else "-" for k in KINDS)


def render_text(matrix: Matrix) -> str:
    names = [name for _, name in FAMILIES]
    header = ["target", "GPU"] + names
    table = [header]
    for row in matrix.rows:
        t = row.target
        table.append([t.name, f"{t.gpus[0] if t.gpus else ''} ({t.architecture})"] + [_cell(row.cells[n]) for n in names])
    widths = [max(len(r[c]) for r in table) for c in range(len(header))]
    lines = [f"{matrix.files} file{'s' if matrix.files != 1 else ''} checked for {len(matrix.rows)} targets; "
             "each cell: blockers/fixable/unsafe-fixable/notes ('.' = none)", ""]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in table]
    lines.append("")
    name_width = max((len(r.target.name) for r in matrix.rows), default=0)
    for r in matrix.rows:
        lines.append(f"{r.target.name.ljust(name_width)}  {r.verdict}")
        indent = " " * (name_width + 4)
        lines += [f"{indent}{detail}" for detail in (r.scope, r.rollout and f"rollout: {r.rollout}") if detail]
        if r.status == BLOCKED:  # what blocks it, where: the user's next step
            lines += [f"{indent}{f.path}:{f.location.line}: {f.code} {f.message}" for f in r.deciding[:SHOWN_DETAILS]]
            if len(r.deciding) > SHOWN_DETAILS:
                lines.append(f"{indent}... {_count(len(r.deciding) - SHOWN_DETAILS, 'more blocker')}: "
                             f"`rlcompat scan --target {r.target.name}` lists them")
    if matrix.errors:
        lines.append("")
        lines += [f"error: {e.one_line()}" for e in matrix.errors]
        lines.append(f"{len(matrix.errors)} file{'s' if len(matrix.errors) != 1 else ''} could not be checked: "
                     "the verdicts hold for the rest only.")
    return "\n".join(lines) + "\n"


def render_json(matrix: Matrix) -> str:
    from rlcompat.report.json_format import SCHEMA_VERSION, error_dict, finding_dict

    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rlcompat", "version": __version__},
        "command": "matrix",
        "run": matrix.run,
        "files": matrix.files,
        "families": [{"prefix": prefix, "name": name} for prefix, name in FAMILIES],
        "targets": [
            {
                "name": r.target.name,
                "capability": r.target.capability_text,
                "architecture": r.target.architecture,
                "gpus": list(r.target.gpus),
                "cells": r.cells,
                "totals": r.totals,
                "suppressed": r.suppressed,
                "status": r.status,
                "verdict": r.verdict,
                "first_blocker": None if r.first_blocker is None else finding_dict(r.first_blocker),
                "deciding": [finding_dict(f) for f in r.deciding],
                "decided_by": rule_codes(r.deciding),
                "scope": r.scope or None,
                "not_in_run": [{"run": option.name, "selected_by": option.option, "proof": option.proof,
                                "counts": {k: sum(1 for f in fs if kind_of(f) == k) for k in KINDS},
                                "codes": rule_codes(fs)}
                               for option, fs in r.other_runs.items()],
                "rollout": r.rollout or None,
                **({"not_reached": [{**finding_dict(f), "reached": False,
                                     "not_reached": {"reason": why.reason, "detail": why.detail}}
                                    for f, why in r.not_reached]} if matrix.run not in run_scope.run_names() else {}),
            }
            for r in matrix.rows
        ],
        "errors": [error_dict(e) for e in matrix.errors],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
