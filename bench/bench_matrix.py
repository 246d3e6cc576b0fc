"""What `rlcompat matrix` costs: one matrix run against one scan and against one scan per target, on a copy of the
installed verl 0.9.1 package.

    python bench/bench_matrix.py [--reps 3] [--targets sm60,sm61,sm70,sm75,sm80,sm86,sm89,sm90] [--jobs N]

Every command runs cold (`--no-cache`) in a fresh process through this interpreter's `python -m rlcompat`;
repetitions alternate between the commands so that machine noise spreads evenly. Reported per command: median
wall time and median CPU time (user + system of the process and its workers; steadier than wall time on a shared
machine), then the ratios matrix / one scan and matrix / N scans.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_TARGETS = "sm60,sm61,sm70,sm75,sm80,sm86,sm89,sm90"


def verl_dir() -> Path:
    out = subprocess.run([sys.executable, "-c", "import os, verl; print(os.path.dirname(verl.__file__))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child and its descendants) of one run."""
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = os.times()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--targets", default=DEFAULT_TARGETS)
    ap.add_argument("--jobs", type=int, default=None, help="worker processes for every command (default: all cores)")
    args = ap.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    work = Path(tempfile.mkdtemp(prefix="rlcompat-bench-matrix-"))
    try:
        tree = work / "verl"
        shutil.copytree(verl_dir(), tree, ignore=shutil.ignore_patterns("__pycache__"))
        rl = [sys.executable, "-m", "rlcompat"]
        jobs = ["--jobs", str(args.jobs)] if args.jobs else []
        matrix = rl + ["matrix", ".", "--targets", ",".join(targets), "--no-cache", *jobs]
        scans = {t: rl + ["scan", ".", "--target", t, "--no-cache", "--output-format", "json", *jobs] for t in targets}
        one_target = "sm61" if "sm61" in targets else targets[0]
        files = sum(1 for p in tree.rglob("*") if p.suffix in (".py", ".yaml", ".yml", ".sh", ".md"))
        timed(matrix, tree)  # warm the file system cache and the bytecode
        rows: dict[str, list[tuple[float, float]]] = {"matrix": [], f"scan --target {one_target}": [], f"{len(targets)} scans": []}
        for _ in range(args.reps):
            rows["matrix"].append(timed(matrix, tree))
            per_target = [timed(scans[t], tree) for t in targets]
            rows[f"scan --target {one_target}"].append(per_target[targets.index(one_target)])
            rows[f"{len(targets)} scans"].append((sum(w for w, _ in per_target), sum(c for _, c in per_target)))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for name, v in rows.items()}
    print(f"verl 0.9.1 package copy, ~{files} candidate files, {len(targets)} targets ({','.join(targets)}), "
          f"{args.reps} reps, {os.cpu_count()} cores, jobs={args.jobs or 'all'}; cold (--no-cache)")
    print(f"{'command':<22} {'wall (median)':>14} {'CPU (median)':>14}   wall runs")
    for name, (wall, cpu) in med.items():
        runs = ", ".join(f"{w:.2f}" for w, _ in rows[name])
        print(f"{name:<22} {wall:>12.2f} s {cpu:>12.2f} s   {runs}")
    m_wall, m_cpu = med["matrix"]
    s_wall, s_cpu = med[f"scan --target {one_target}"]
    n_wall, n_cpu = med[f"{len(targets)} scans"]
    print(f"matrix / one scan: wall {m_wall / s_wall:.2f}x, CPU {m_cpu / s_cpu:.2f}x")
    print(f"matrix / {len(targets)} scans: wall {m_wall / n_wall:.2f}x, CPU {m_cpu / n_cpu:.2f}x")


if __name__ == "__main__":
    main()
