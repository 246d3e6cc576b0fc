"""The fast path against plain LibCST on whole installed packages: findings and fixes must be byte-identical.

    python bench/plain_parity.py [--packages verl,transformers,torch] [--targets sm61,sm75]

`tests/test_plain_libcst.py` holds the speed machinery (rlcompat/lang/pyspeed/: narrowing, parts, positions, the
parse without validation) to plain LibCST (`RLCOMPAT_PLAIN_LIBCST=1`) on the fixtures, a sample of verl and
subsets of torch and transformers in CI; this runs the same comparison through the CLI on every file of each
package. For each package and target, on copies of its .py/.yaml/.yml/.sh files: `scan --output-format json
--no-cache`, and `fix --unsafe-fixes --no-cache` of a fresh copy, once each way; the JSON reports (paths made
relative) and the fixed trees must be identical byte for byte. Exit 1 on any difference. Each run's wall time,
CPU time (user + sys of the command and its workers) and peak RSS (the largest process) are printed: plain mode
parses every file with a trigger whole, which takes several times the time, and for torch about 1 GB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_trees import package_dir  # this folder is first on sys.path when a script runs

KEPT = (".py", ".yaml", ".yml", ".sh")
RUN = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "with open(sys.argv[1], 'wb') as out: p = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL)\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss, p.returncode)\n"
)


def copy_sources(src: Path, dest: Path) -> None:
    def ignore(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if n == "__pycache__" or (not os.path.isdir(os.path.join(directory, n))
                                                           and not n.endswith(KEPT))]

    shutil.copytree(src, dest, ignore=ignore)


def run(args: list[str], out: Path, plain: bool, cwd: Path) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of `python -m rlcompat ARGS`, its stdout written to `out`."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("RLCOMPAT_PLAIN_LIBCST", None)
    if plain:
        env["RLCOMPAT_PLAIN_LIBCST"] = "1"
    done = subprocess.run([sys.executable, "-c", RUN, str(out), sys.executable, "-m", "rlcompat", *args],
                          capture_output=True, text=True, cwd=cwd, env=env, check=True)
    wall, cpu, rss_kb, rc = done.stdout.split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"rlcompat {' '.join(args)} exited {rc}{' (plain LibCST)' if plain else ''}")
    return float(wall), float(cpu), int(rss_kb) / 1024, int(rc)


def tree_differences(a: Path, b: Path) -> list[str]:
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    return sorted(str(p) for p in files_a ^ files_b) + sorted(
        str(p) for p in files_a & files_b if (a / p).read_bytes() != (b / p).read_bytes())


def compare(package: str, target: str, work: Path) -> bool:
    src = work / "src" / package
    if not src.exists():
        copy_sources(package_dir(package), src)
    outputs: dict[str, dict[str, bytes]] = {}
    fixed: dict[str, Path] = {}
    for way in ("fast", "plain"):
        tree = work / way / package
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(src, tree)
        outputs[way] = {}
        for command in ("scan", "fix"):
            extra = ["--unsafe-fixes"] if command == "fix" else []
            out = work / f"{way}.{command}.json"
            wall, cpu, rss, _ = run([command, str(tree), "--target", target, "--no-cache", "--output-format", "json",
                                     *extra], out, way == "plain", work)
            outputs[way][command] = out.read_bytes().replace(str(tree).encode(), b"TREE")
            print(f"{package} {target} {way} {command}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:.0f} MB",
                  flush=True)
        fixed[way] = tree
    same = True
    for command in ("scan", "fix"):
        a, b = outputs["fast"][command], outputs["plain"][command]
        print(f"{package} {target} {command}: {'identical report' if a == b else 'REPORTS DIFFER'} ({len(a):,} bytes)")
        same &= a == b
    differing = tree_differences(fixed["fast"], fixed["plain"])
    changed = len(tree_differences(src, fixed["fast"]))
    print(f"{package} {target}: {'fixed trees identical' if not differing else 'FIXED TREES DIFFER: ' + ', '.join(differing[:10])}"
          f" ({changed} files changed by fix)", flush=True)
    return same and not differing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packages", default="verl,transformers,torch")
    ap.add_argument("--targets", default="sm61,sm75")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlcompat-plain-parity-"))
    try:
        results = [compare(p, t, work) for p in args.packages.split(",") if p for t in args.targets.split(",") if t]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
