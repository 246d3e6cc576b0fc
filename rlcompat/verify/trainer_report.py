"""The text report of `rlcompat verify --trainer`: per step rewards, losses, timings and memory, then the verdict."""

from __future__ import annotations

from rlcompat.verify.report import table_lines, verdict_lines
from rlcompat.verify.trainer_memory import comparison_lines

# (metric key in verl's file logger, column label, format)
STEP_COLUMNS = [
    ("critic/score/mean", "reward", "{:.3f}"),
    ("actor/pg_loss", "pg_loss", "{:.4g}"),
    ("critic/vf_loss", "vf_loss", "{:.4g}"),
    ("actor/grad_norm", "actor_gn", "{:.3g}"),
    ("timing_s/gen", "gen s", "{:.2f}"),
    ("timing_s/update_weights", "sync s", "{:.2f}"),
    ("timing_s/update_critic", "critic s", "{:.2f}"),
    ("timing_s/update_actor", "actor s", "{:.2f}"),
    ("timing_s/step", "step s", "{:.2f}"),
    ("actor/perf/max_memory_allocated_gb", "actor GB", "{:.2f}"),
    ("critic/perf/max_memory_allocated_gb", "critic GB", "{:.2f}"),
]


def step_table(steps: list[dict], servers: list[dict]) -> list[str]:
    cols = [c for c in STEP_COLUMNS if any(c[0] in s["metrics"] for s in steps)]
    by_step = {int(x.get("global_steps") or 0) + 1: x for x in servers}  # a server reports the step it served
    header = ["step"] + [c[1] for c in cols] + ["rollout tok/s", "rollout GB"]
    rows = [header]
    for s in steps:
        row = [str(s["step"])]
        for key, _, fmt in cols:
            val = s["metrics"].get(key)
            row.append(fmt.format(val) if isinstance(val, (int, float)) else "-")
        srv = by_step.get(int(s["step"] or 0))
        if srv and srv.get("generate_seconds"):
            row.append(f"{srv['tokens'] / srv['generate_seconds']:.0f}")
            row.append(f"{srv.get('peak_memory_bytes', 0) / 2**30:.2f}" if srv.get("device", "").startswith("cuda") else "-")
        else:
            row += ["-", "-"]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return ["  " + "  ".join(cell.rjust(w) for cell, w in zip(r, widths)) for r in rows]


def trace_lines(trace: dict | None, listed: int = 12) -> list[str]:
    """--trace: scan's findings in the tree, by whether a line of theirs ran in any process of the run."""
    if not trace:
        return []
    reached, not_reached, other = trace["reached"], trace["not_reached"], trace["not_traceable"]
    imported = sum(1 for row in reached if row.get("at_import"))
    out = ["", f"  findings of `rlcompat scan` in the tree: {len(reached)} reached by this run"
               + (f" ({imported} only as module or class-level code, which runs at import: a default the config may "
                  "override)" if imported else "")
               + f", {len(not_reached)} not reached, {len(other)} in files that do not run (configs, scripts)"]
    for row in reached[:listed]:
        when = "  (import)" if row.get("at_import") else ""
        out.append(f"    reached  {row['code']}  {row['location']}{when}")
    if len(reached) > listed:
        out.append(f"    ... {len(reached) - listed} more reached (--output-format json lists all)")
    return out


def render_trainer_text(result: dict) -> str:
    status = result.get("status", "error")
    head = {"pass": "PASS", "fail": "FAIL"}.get(status, "CANNOT RUN")
    out = [f"rlcompat verify --trainer: {head}", ""]
    rows = []
    if result.get("verl"):
        rows.append(("verl", f"{result['verl']['version']}  {result['verl']['path']}"))
    target = result.get("target") or {}
    if target:
        how = "emulated: the guard enforces the target's limits in every process" if target.get("emulated") else \
            "real: a GPU of the target's generation, the guard only watches"
        rows.append(("target", f"{target['describe']}; {how}"))
    st = result.get("settings") or {}
    if st:
        rows.append(("run", f"python -m verl.trainer.main_ppo on {st.get('device')}: {st.get('steps')} step(s), "
                            f"batch {st.get('batch')}, model {st.get('model')}, algo {st.get('algo')}, "
                            f"rollout {st.get('rollout')} ({st.get('rollout_dtype')})"))
    script = result.get("script")
    if script:
        rows.append(("launch script", script["path"]))
        rows.append(("swapped for tiny", ", ".join(script["swapped"]) or "nothing"))
    out += table_lines(rows)
    phases = result.get("phases") or []
    if phases:
        out.append("")
        prow = [(p["name"], f"{p['seconds']:7.2f} s") for p in phases]
        prow.append(("total (wall)", f"{result.get('wall_seconds', 0):7.2f} s"))
        out += table_lines(prow)
    steps = result.get("steps") or []
    if steps:
        out.append("")
        out += step_table(steps, result.get("rollout_servers") or [])
    memory = comparison_lines(result)
    if memory:
        out.append("")
        out += memory
    checks = result.get("checks") or []
    if checks:
        out.append("")
        out += [f"  {'ok  ' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}" for c in checks]
    out += trace_lines(result.get("trace"))
    out.append("")
    verdict = verdict_lines(result)
    if status == "pass":
        verdict[0] = (f"PASS: verl's trainer ran {len(steps)} PPO step(s) end to end under the target's limits; "
                      "no violation.")
    out += verdict
    if status != "pass" and not result.get("violations") and result.get("log_tail"):
        out.append("  last lines of main_ppo's output:")
        out += [f"    {line[:200]}" for line in result["log_tail"].splitlines()[-6:]]
    if result.get("workdir"):
        out.append(f"  kept: {result['workdir']}")
    return "\n".join(out) + "\n"
