"""Speed and memory of rlcompat against its peers, measured in one run on the pinned verl 0.9.1 package.

    python bench/bench_scan.py [--reps 5] [--slow-reps 1] [--target sm61] [--write docs/performance.md]

Peers (TorchFix, Fixit, ruff) are installed into bench/.venv-peers on first use. rlcompat is measured as a
pre-commit hook runs it: this checkout installed (not editable) into bench/.venv-rlcompat, bytecode compiled at
install as pip does, started through its `rlcompat` console script. Each command runs in a fresh process; repetitions alternate between tools so that machine noise spreads evenly. Reported: median wall time,
spread (min-max), peak RSS of the largest process, and ratios against ruff and TorchFix from the same run.
Also measured in the same run: the start-up floor (a bare `python`, and `import typer, libcst`, which any run that
parses Python pays) and, where torch is installed, torch's 1.4 MB `common_methods_invocations.py` against ruff on
the same file (issue 29). `--slow-reps 0` leaves TorchFix and Fixit out.
"""

from __future__ import annotations

import argparse
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
REPO = HERE.parent
PEERS = HERE / ".venv-peers"
INSTALLED = HERE / ".venv-rlcompat"
TIMER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "w = time.perf_counter() - t\n"
    "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n"
)


def verl_dir() -> Path:
    out = subprocess.run([sys.executable, "-c", "import os, verl; print(os.path.dirname(verl.__file__))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def ensure_peers() -> Path:
    py = PEERS / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "torchfix", "fixit", "ruff"], check=True)
    return PEERS / "bin"


def install_rlcompat() -> list[str]:
    """This checkout, installed the way pre-commit installs a hook repository (`pip install .`, not editable)."""
    py = INSTALLED / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(INSTALLED)], check=True)
    # A local directory is always rebuilt and reinstalled, so the figures are of the code checked out now.
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(REPO)], check=True)
    return [str(INSTALLED / "bin" / "rlcompat")]


BIG_SCAN = "rlcompat scan torch's 1.4 MB file (common_methods_invocations.py)"
BIG_RUFF = "ruff check --select ALL --no-cache, the same file"


def torch_big_file(work: Path) -> Path | None:
    """A copy of torch's `testing/_internal/common_methods_invocations.py` (found without importing torch), or None."""
    out = subprocess.run([sys.executable, "-c", "import importlib.util as u; s = u.find_spec('torch'); "
                          "print(list(s.submodule_search_locations)[0] if s else '')"], capture_output=True, text=True)
    source = Path(out.stdout.strip() or "/nonexistent") / "testing" / "_internal" / "common_methods_invocations.py"
    if not source.is_file():
        return None
    copy = work / "common_methods_invocations.py"
    shutil.copyfile(source, copy)
    return copy


def measure(cmd: list[str], cwd: Path) -> tuple[float, int, int]:
    out = subprocess.run([sys.executable, "-c", TIMER, *cmd], capture_output=True, text=True, cwd=cwd, check=True)
    wall, rss_kb, rc = out.stdout.split()
    return float(wall), int(rss_kb), int(rc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--slow-reps", type=int, default=1, help="repetitions for TorchFix and Fixit (about a minute each)")
    ap.add_argument("--target", default="sm61")
    ap.add_argument("--write", help="also write the table into this Markdown file")
    args = ap.parse_args()

    peers = ensure_peers()
    RL = install_rlcompat()
    work = Path(tempfile.mkdtemp(prefix="rlcompat-bench-"))
    tree = work / "verl"
    shutil.copytree(verl_dir(), tree, ignore=shutil.ignore_patterns("__pycache__"))
    one_file = tree / "workers" / "rollout" / "hf_rollout.py"  # a bf16 autocast to report: LibCST must parse it
    plain_file = tree / "trainer" / "ppo" / "core_algos.py"  # 104 KB, no trigger: the usual commit
    big_file = torch_big_file(work)  # torch's 1.4 MB test table (issue 29: <= 1.0 s), where torch is installed
    t = args.target
    cache_env_dir = work  # rlcompat's cache lives under the working directory when no pyproject config exists

    def fix_copy() -> list[str]:
        dst = work / "fixcopy"
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(tree, dst)
        return [*RL, "fix", str(dst), "--target", t, "--no-cache"]

    cases = {
        "rlcompat scan (cold, no cache)": (lambda: [*RL, "scan", str(tree), "--target", t, "--no-cache"], args.reps),
        "rlcompat scan (warm, cached)": (lambda: [*RL, "scan", str(tree), "--target", t], args.reps),
        "rlcompat scan one file with a hazard (pre-commit)": (lambda: [*RL, "scan", str(one_file), "--target", t, "--no-cache"], args.reps),
        "rlcompat scan one file without a trigger (pre-commit)": (lambda: [*RL, "scan", str(plain_file), "--target", t, "--no-cache"], args.reps),
        "rlcompat fix (copy of the tree)": (fix_copy, args.reps),
        "ruff check --select ALL --no-cache": (lambda: [str(peers / "ruff"), "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", str(tree)], args.reps),
        "grep -rE (bf16|flash|triton|compile)": (lambda: ["grep", "-rEn", "bfloat16|bf16|flash_attn|flash_attention|triton|compile", str(tree)], args.reps),
        # What any rlcompat process pays before it reads a file: Python, typer, and LibCST for a file it must parse.
        "floor: python -c pass": (lambda: [str(INSTALLED / "bin" / "python"), "-c", "pass"], args.reps),
        "floor: python -c 'import typer, libcst'": (lambda: [str(INSTALLED / "bin" / "python"), "-c", "import typer, libcst"], args.reps),
        **({
            BIG_SCAN: (lambda: [*RL, "scan", str(big_file), "--target", t, "--no-cache"], args.reps),
            BIG_RUFF: (lambda: [str(peers / "ruff"), "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", str(big_file)], args.reps),
        } if big_file else {}),
        "torchfix": (lambda: [str(peers / "torchfix"), str(tree)], args.slow_reps),
        "fixit lint": (lambda: [str(peers / "fixit"), "lint", str(tree)], args.slow_reps),
    }
    # warm the cache once so that "warm" means warm
    subprocess.run([*RL, "scan", str(tree), "--target", t], cwd=cache_env_dir, capture_output=True)
    results: dict[str, list[tuple[float, int]]] = {name: [] for name in cases}
    load = os.getloadavg()
    for rep in range(max(args.reps, args.slow_reps)):
        for name, (make, reps) in cases.items():
            if rep < reps:
                wall, rss, _ = measure(make(), cache_env_dir)
                results[name].append((wall, rss))
                print(f"rep {rep + 1}: {name}: {wall:.2f} s, {rss / 1024:.0f} MB", file=sys.stderr)

    results = {n: r for n, r in results.items() if r}  # `--slow-reps 0`: no TorchFix and Fixit rows
    med = {n: statistics.median(w for w, _ in r) for n, r in results.items()}
    ruff = med["ruff check --select ALL --no-cache"]
    torchfix = med.get("torchfix")
    fixit = med.get("fixit lint")
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}; "
        f"tree: verl 0.9.1 package ({sum(1 for _ in tree.rglob('*.py'))} .py files); target {t}; "
        f"load average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
        "",
        "| command | median s | min-max s | peak RSS MB | vs ruff (same tree or file) | TorchFix / this | Fixit / this |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, runs in results.items():
        walls = [w for w, _ in runs]
        rss = max(r for _, r in runs) / 1024
        lines.append(
            f"| {name} | {med[name]:.2f} | {min(walls):.2f}-{max(walls):.2f} | {rss:.0f} "
            f"| {med[name] / (med[BIG_RUFF] if name in (BIG_SCAN, BIG_RUFF) else ruff):.2f}x "
            f"| {f'{torchfix / med[name]:.0f}x' if torchfix else '-'} | {f'{fixit / med[name]:.0f}x' if fixit else '-'} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.write:
        path = Path(args.write)
        text = path.read_text() if path.exists() else ""
        start, end = "<!-- bench:start -->", "<!-- bench:end -->"
        if start in text and end in text:
            text = text[: text.index(start) + len(start)] + "\n" + table + "\n" + text[text.index(end):]
        else:
            text += f"\n{start}\n{table}\n{end}\n"
        path.write_text(text)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
