"""The verify report: a plain-text page a person reads, or the result as JSON for CI."""

from __future__ import annotations

import json
import os

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep  # rlcompat/

# Metrics worth a line in the text report, in this order: (key in the role's metrics, label).
_FIGURES = {
    "actor": [("loss", "loss"), ("actor/pg_loss", "pg_loss"), ("kl_loss", "kl_loss"), ("actor/ppo_kl", "ppo_kl"),
              ("actor/pg_clipfrac", "pg_clipfrac"), ("grad_norm", "grad_norm")],
    "critic": [("loss", "loss"), ("critic/vf_clipfrac", "vf_clipfrac"), ("grad_norm", "grad_norm")],
}


def render_json(result: dict) -> str:
    return json.dumps(result, indent=2, sort_keys=False) + "\n"


def render_text(result: dict) -> str:
    out: list[str] = []
    status = result.get("status", "error")
    head = {"pass": "PASS", "fail": "FAIL"}.get(status, "CANNOT RUN")
    target = result.get("target") or {}
    device = result.get("device") or {}
    out.append(f"rlcompat verify: {head}")
    out.append("")
    rows = []
    if result.get("verl"):
        rows.append(("verl", f"{result['verl']['version']}  {result['verl']['path']}"))
    if device:
        extra = f", capability {device['capability']}" if device.get("capability") else ""
        threads = f", {device['threads']} threads" if device.get("threads") else ""
        rows.append(("device", f"{device['kind']} ({device.get('name') or '?'}{extra}{threads})"))
    if target:
        how = "emulated: the guard enforces the target's limits" if target.get("emulated") else \
            "real: a GPU of the target's generation, the guard only watches"
        rows.append(("target", f"{target['describe']}; {how}"))
    settings = result.get("settings") or {}
    if settings:
        rows.append(("run", f"strategy {settings.get('strategy')}, algo {settings.get('algo')}, {settings.get('steps')} step(s), "
                            f"batch {settings.get('batch')}, seed {settings.get('seed')}"))
        rows.append(("tree defaults", f"attn_implementation={settings.get('attn_implementation')}, "
                                      f"use_torch_compile={settings.get('use_torch_compile')}, "
                                      f"use_remove_padding={settings.get('use_remove_padding')}"))
    if result.get("torch"):
        rows.append(("libraries", f"torch {result['torch']}, transformers {result.get('transformers', '?')}"))
    out += table_lines(rows)

    phases = result.get("phases") or []
    if phases:
        out.append("")
        rows = [(p["name"], f"{p['seconds']:7.2f} s") for p in phases]
        rows.append(("total (wall, incl. interpreter start)", f"{result.get('wall_seconds', 0):7.2f} s"))
        if result.get("cpu_seconds"):
            rows.append(("total CPU time (user+sys)", f"{result['cpu_seconds']:7.2f} s"))
        out += table_lines(rows)

    metrics = result.get("metrics") or {}
    figures = []
    for role, keys in _FIGURES.items():
        m = metrics.get(role) or {}
        parts = [f"{label} {m[k]:.4g}" for k, label in keys if isinstance(m.get(k), (int, float))]
        if parts:
            figures.append((role, ", ".join(parts)))
    if "rewards" in metrics:
        figures.append(("rewards", " ".join(f"{r:g}" for r in metrics["rewards"]) + "  (verl gsm8k scorer)"))
    if "logprob_max_abs_diff" in metrics:
        figures.append(("log-prob check", f"max |verl - HF| = {metrics['logprob_max_abs_diff']:.2e}"))
    dtypes = result.get("dtypes_seen") or {}
    if dtypes:
        figures.append(("dtypes seen", ", ".join(f"{k} {v}" for k, v in dtypes.items())))
    if result.get("blocked_imports"):
        figures.append(("blocked imports", ", ".join(result["blocked_imports"])))
    if figures:
        out.append("")
        out += table_lines(figures)

    checks = result.get("checks") or []
    if checks:
        out.append("")
        for c in checks:
            out.append(f"  {'ok  ' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}")

    adaptations = result.get("adaptations") or []
    if adaptations:
        out.append("")
        out.append("  harness adaptations (not changes to the tree):")
        out += [f"    - {a}" for a in adaptations]

    out.append("")
    out += verdict_lines(result)
    if result.get("workdir"):
        out.append(f"  kept: {result['workdir']}")
    return "\n".join(out) + "\n"


def verdict_lines(result: dict) -> list[str]:
    status = result.get("status")
    if status == "pass":
        return ["PASS: one PPO step trained under the target's limits; no violation."]
    lines = [f"{'FAIL' if status == 'fail' else 'CANNOT RUN'}: {result.get('reason') or 'unknown reason'}"]
    violations = result.get("violations") or []
    if violations:
        v = violations[0]
        loc = v.get("location")
        if loc:
            where = "" if v.get("in_tree") else "  (outside the tree under test)"
            lines.append(f"  at {loc['file']}:{loc['line']} in {loc['function']}{where}")
        for f in (v.get("stack") or [])[1:5]:
            lines.append(f"     from {f['file']}:{f['line']} in {f['function']}")
        verl_path = (result.get("verl") or {}).get("path")
        if v.get("kind") in ("bf16", "flash_attn_selected") and verl_path:
            target = (result.get("target") or {}).get("name", "TARGET")
            lines.append(f"  where the tree selects it: rlcompat scan {verl_path} --target {target}  (rlcompat fix rewrites it)")
        if len(violations) > 1:
            lines.append(f"  ({len(violations)} violations recorded; the first is shown, all are in --output-format json)")
    elif result.get("error") and result["error"].get("location") and not _ours(result["error"]["location"]["file"]):
        loc = result["error"]["location"]
        lines.append(f"  at {loc['file']}:{loc['line']} in {loc['function']}")
    if status == "error" and result.get("log_tail") and not violations and not result.get("verl"):
        lines.append("  last lines of the child's output:")
        lines += [f"    {line}" for line in result["log_tail"].splitlines()[-8:]]
    return lines


def _ours(path: str) -> bool:
    """A frame of rlcompat's own harness: where verify broke, not where the user's tree or a library did, so not a
    place to send the user (the reason says what to do; the traceback stays in --output-format json)."""
    return os.path.realpath(path).startswith(_PACKAGE_ROOT)


def table_lines(rows) -> list[str]:
    if not rows:
        return []
    width = max(len(k) for k, _ in rows)
    return [f"  {k:<{width}}  {v}" for k, v in rows]
