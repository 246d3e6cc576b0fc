"""Per-step figures of a `rlcompat verify --trainer` run, and a plot of GPU memory per step.

usage:
  python bench/trainer_memory.py RESULT.json [--gpu-log GPU.csv] --out DIR [--name NAME] [--device NAME]
  python bench/trainer_memory.py STEPS.csv --out DIR [--name NAME] [--device NAME]   (plot a CSV written before)

Reads verify's JSON result (verl's per-step metrics, the hf rollout servers' per-step figures) and, if given, a
`nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 500` log taken during the run.
Writes DIR/NAME.csv (one row per step; not for a CSV input) and DIR/NAME.png (memory per step) when matplotlib is
importable; without it, run this script again where it is on the CSV (it has everything the plot needs).

The plot's title names the GPU the run used: `--device`, else the name in the result's `device`, else the first
field of `environment.txt` beside the input (bench/verify_trainer_on_device.sh writes nvidia-smi's
`name,compute_cap,driver_version,memory.total` line there).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

COLUMNS = [
    ("step", None),
    ("step_s", "timing_s/step"),
    ("gen_s", "timing_s/gen"),
    ("sync_s", "timing_s/update_weights"),
    ("actor_update_s", "timing_s/update_actor"),
    ("critic_update_s", "timing_s/update_critic"),
    ("reward_mean", "critic/score/mean"),
    ("pg_loss", "actor/pg_loss"),
    ("vf_loss", "critic/vf_loss"),
    ("actor_peak_alloc_gb", "actor/perf/max_memory_allocated_gb"),
    ("actor_peak_reserved_gb", "actor/perf/max_memory_reserved_gb"),
    ("critic_peak_alloc_gb", "critic/perf/max_memory_allocated_gb"),
    ("host_memory_gb", "actor/perf/cpu_memory_used_gb"),
]


def rows_from_result(result: dict) -> list[dict]:
    servers = {int(s.get("global_steps") or 0) + 1: s for s in result.get("rollout_servers") or []}
    rows = []
    for step in result.get("steps") or []:
        m = step["metrics"]
        row = {"step": step["step"]}
        for name, key in COLUMNS[1:]:
            row[name] = m.get(key)
        srv = servers.get(int(step["step"]))
        if srv:
            row["rollout_tokens"] = srv.get("tokens")
            row["rollout_tokens_per_s"] = (srv["tokens"] / srv["generate_seconds"]) if srv.get("generate_seconds") else None
            row["rollout_peak_alloc_gb"] = srv.get("peak_memory_bytes", 0) / 2**30
        rows.append(row)
    return rows


def attach_gpu_log(rows: list[dict], gpu_csv: Path | None) -> None:
    """The whole GPU's used memory (all processes) at its highest during each step, from nvidia-smi's log.
    Steps are placed on the log's clock by their durations, counted back from the end of the last sample."""
    if gpu_csv is None or not gpu_csv.is_file() or not rows:
        return
    from datetime import datetime

    samples = []
    for line in gpu_csv.read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2:
            continue
        try:
            t = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, float(parts[1]) / 1024))
        except ValueError:
            continue
    if not samples:
        return
    end = samples[-1][0]
    bounds = []
    for row in reversed(rows):
        start = end - float(row.get("step_s") or 0)
        bounds.append((row, start, end))
        end = start
    for row, start, stop in bounds:
        inside = [gb for t, gb in samples if start <= t <= stop]
        row["gpu_used_peak_gb"] = max(inside) if inside else None


def rows_from_csv(path: Path) -> list[dict]:
    """The rows write_csv wrote, numbers as numbers (an empty cell is a figure the run did not report)."""
    rows = []
    with open(path, newline="") as f:
        for raw in csv.DictReader(f):
            row = {}
            for key, value in raw.items():
                row[key] = None if value in ("", None) else (int(value) if key == "step" else float(value))
            rows.append(row)
    return rows


def recorded_device(result_path: Path, result: dict | None) -> str | None:
    """The GPU's name as the record states it: the result's own, else environment.txt's nvidia-smi line."""
    name = ((result or {}).get("device") or {}).get("name")
    if name:
        return str(name)
    environment = result_path.parent / "environment.txt"
    if environment.is_file():
        for line in environment.read_text(errors="replace").splitlines():
            first = line.split(",")[0].strip()
            if first.startswith(("NVIDIA", "Tesla", "Quadro", "GeForce")):
                return first
    return None


def write_csv(rows: list[dict], path: Path) -> None:
    keys = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def plot(rows: list[dict], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
    steps = [r["step"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for key, label in (("gpu_used_peak_gb", "whole GPU, peak in step (nvidia-smi)"),
                       ("actor_peak_alloc_gb", "trainer worker, peak allocated (verl)"),
                       ("actor_peak_reserved_gb", "trainer worker, peak reserved (verl)"),
                       ("rollout_peak_alloc_gb", "hf rollout server, peak allocated")):
        ys = [r.get(key) for r in rows]
        if any(isinstance(y, (int, float)) for y in ys):
            ax.plot(steps, [y if isinstance(y, (int, float)) else float("nan") for y in ys], marker="o", label=label)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("PPO step")
    ax.set_ylabel("GiB")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("result")
    p.add_argument("--gpu-log")
    p.add_argument("--out", required=True)
    p.add_argument("--name", default="trainer_memory")
    p.add_argument("--device", help="the GPU the run used, when the record does not say (see the module docstring)")
    p.add_argument("--title", help="the whole title; by default it names the run's GPU")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    source = Path(a.result)
    result = None
    if source.suffix == ".csv":
        rows = rows_from_csv(source)
    else:
        result = json.loads(source.read_text())
        rows = rows_from_result(result)
        attach_gpu_log(rows, Path(a.gpu_log) if a.gpu_log else None)
    device = a.device or recorded_device(source, result)
    if a.title is None and device is None:
        p.error(f"no GPU name in {source} nor in an environment.txt beside it: pass --device or --title")
    title = a.title or f"verl main_ppo with the hf rollout on one {device}: memory per step"
    written = []
    if result is not None:  # a CSV given as input is not written again
        write_csv(rows, out / f"{a.name}.csv")
        written.append(str(out / f"{a.name}.csv"))
    if plot(rows, out / f"{a.name}.png", title):
        written.append(str(out / f"{a.name}.png"))
    else:
        written.append("no plot: matplotlib is not importable here; run this again on the CSV where it is")
    print(f"{len(rows)} steps -> " + ", ".join(written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
