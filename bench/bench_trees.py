"""Big trees and giant files: rlcompat against ruff on the torch and transformers packages, and how time and memory
grow with the size of a tree and the number of findings in one file.

    python bench/bench_trees.py [--reps 1] [--target sm61] [--write docs/performance.md]
    python bench/bench_trees.py --only scaling          # only the growth curves
    python bench/bench_trees.py --only trees --trees torch

rlcompat and ruff are installed and started as in bench/bench_scan.py (this checkout installed, not editable, into
bench/.venv-rlcompat; ruff from bench/.venv-peers). Every command runs in a fresh process; reported: median wall
time, median CPU time (user + sys of the command and its workers: on a shared machine wall times scatter with the
load, CPU times much less) and the peak RSS of the largest process. `fix` works on a fresh copy each time.

Growth: the verl package copied 1, 2 and 4 times side by side (then the same for the `--growth-tree`), and one
generated file with 1,000, 10,000 and 100,000 findings (`x_N = t.to(torch.bfloat16)` lines), scanned and fixed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_scan  # noqa: E402  (peers, the installed checkout)

TIMER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "w = time.perf_counter() - t\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(w, u.ru_utime + u.ru_stime, u.ru_maxrss, p.returncode)\n"
)
START, END = "<!-- bench-trees:start -->", "<!-- bench-trees:end -->"


def measure(cmd: list[str], cwd: Path) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of one command in a fresh process."""
    out = subprocess.run([sys.executable, "-c", TIMER, *cmd], capture_output=True, text=True, cwd=cwd, check=True)
    wall, cpu, rss_kb, rc = out.stdout.split()
    return float(wall), float(cpu), int(rss_kb) / 1024, int(rc)


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # found, never imported
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed in {sys.prefix}: run bash scripts/setup.sh")
    return Path(list(spec.submodule_search_locations)[0])


def copy_py(src: Path, dest: Path) -> int:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.so.*", "*.a", "*.dll", "*.dylib",
                                                             "*.pyd", "*.lib", "*.h", "*.hpp", "*.cuh", "*.pt"))
    return sum(1 for _ in dest.rglob("*.py"))


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.py"))


def run_cases(cases: dict, reps: int, cwd: Path) -> dict[str, list[tuple[float, float, float]]]:
    results: dict[str, list] = {name: [] for name in cases}
    for rep in range(reps):
        for name, make in cases.items():
            wall, cpu, rss, rc = measure(make(), cwd)
            results[name].append((wall, cpu, rss))
            print(f"rep {rep + 1}: {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MB (exit {rc})", file=sys.stderr)
    return results


def med(runs, i: int) -> float:
    return statistics.median(r[i] for r in runs)


def trees_table(names: list[str], reps: int, target: str, rl: list[str], ruff: str, work: Path) -> list[str]:
    lines = ["| tree (.py files, MB) | command | wall s (median) | CPU s (median) | peak RSS MB | wall vs ruff | CPU vs ruff |",
             "|---|---|---|---|---|---|---|"]
    for name in names:
        tree = work / name
        files = copy_py(package_dir(name), tree)
        size = tree_bytes(tree) / 1e6

        def fix_copy(tree=tree) -> list[str]:
            dst = work / f"{tree.name}-fix"
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(tree, dst)
            return [*rl, "fix", str(dst), "--target", target, "--no-cache"]

        cases = {
            "rlcompat scan (cold, no cache)": lambda tree=tree: [*rl, "scan", str(tree), "--target", target, "--no-cache"],
            "rlcompat fix (copy of the tree)": fix_copy,
            "ruff check --select ALL --no-cache": lambda tree=tree: [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", str(tree)],
        }
        results = run_cases(cases, reps, work)
        ruff_runs = results["ruff check --select ALL --no-cache"]
        for cmd, runs in results.items():
            lines.append(f"| {name} ({files}, {size:.0f} MB) | {cmd} | {med(runs, 0):.1f} | {med(runs, 1):.1f} | "
                         f"{max(r[2] for r in runs):.0f} | {med(runs, 0) / med(ruff_runs, 0):.2f}x | "
                         f"{med(runs, 1) / med(ruff_runs, 1):.2f}x |")
        shutil.rmtree(work / f"{name}-fix", ignore_errors=True)
    return lines


def growth_table(tree_name: str, reps: int, target: str, rl: list[str], work: Path) -> list[str]:
    lines = [f"| {tree_name} copies | .py files | MB | scan wall s | scan CPU s | CPU s per MB | peak RSS MB |",
             "|---|---|---|---|---|---|---|"]
    src = package_dir(tree_name)
    for copies in (1, 2, 4):
        root = work / f"growth-{tree_name}-{copies}"
        files = sum(copy_py(src, root / f"copy{i}") for i in range(copies))
        size = tree_bytes(root) / 1e6
        runs = run_cases({f"{copies}x": lambda root=root: [*rl, "scan", str(root), "--target", target, "--no-cache"]},
                         reps, work)[f"{copies}x"]
        lines.append(f"| {copies}x | {files} | {size:.1f} | {med(runs, 0):.1f} | {med(runs, 1):.1f} | "
                     f"{med(runs, 1) / size:.2f} | {max(r[2] for r in runs):.0f} |")
        shutil.rmtree(root, ignore_errors=True)
    return lines


def findings_table(reps: int, target: str, rl: list[str], work: Path, counts: tuple[int, ...]) -> list[str]:
    lines = ["| findings in one file | KB | scan wall s | scan CPU s | scan peak RSS MB | fix wall s | fix CPU s | fix peak RSS MB |",
             "|---|---|---|---|---|---|---|---|"]
    for n in counts:
        path = work / f"findings_{n}.py"
        text = "import torch\n" + "".join(f"x_{i} = t.to(torch.bfloat16)\n" for i in range(n))

        def fresh(command: str, path=path, text=text) -> list[str]:
            path.write_text(text)  # every repetition starts from the unfixed file
            return [*rl, command, str(path), "--target", target, "--no-cache"]

        results = run_cases({"scan": lambda: fresh("scan"), "fix": lambda: fresh("fix")}, reps, work)
        s, f = results["scan"], results["fix"]
        lines.append(f"| {n:,} | {len(text) / 1024:.0f} | {med(s, 0):.1f} | {med(s, 1):.1f} | {max(r[2] for r in s):.0f} | "
                     f"{med(f, 0):.1f} | {med(f, 1):.1f} | {max(r[2] for r in f):.0f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--target", default="sm61")
    ap.add_argument("--trees", default="torch,transformers")
    ap.add_argument("--growth-tree", default="verl")
    ap.add_argument("--findings", default="1000,10000,100000")
    ap.add_argument("--only", choices=["trees", "scaling"])
    ap.add_argument("--write", help="also write the tables into this Markdown file (between the bench-trees markers)")
    args = ap.parse_args()

    ruff = str(bench_scan.ensure_peers() / "ruff")
    rl = bench_scan.install_rlcompat()
    work = Path(tempfile.mkdtemp(prefix="rlcompat-bench-trees-"))
    load = os.getloadavg()[0]
    out = [f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
           f"{time.strftime('%Y-%m-%d')}, load average {load:.1f} at the start; target {args.target}; "
           f"{args.reps} repetition(s) a command.", ""]
    try:
        if args.only != "scaling":
            out += trees_table([t for t in args.trees.split(",") if t], args.reps, args.target, rl, ruff, work) + [""]
        if args.only != "trees":
            out += growth_table(args.growth_tree, args.reps, args.target, rl, work) + [""]
            counts = tuple(int(c) for c in args.findings.split(",") if c)
            out += findings_table(args.reps, args.target, rl, work, counts)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = "\n".join(out).rstrip()
    print(table)
    if args.write:
        path = Path(args.write)
        text = path.read_text() if path.exists() else ""
        if START in text and END in text:
            text = text[: text.index(START) + len(START)] + "\n" + table + "\n" + text[text.index(END):]
        else:
            text += f"\n{START}\n{table}\n{END}\n"
        path.write_text(text)


if __name__ == "__main__":
    main()
