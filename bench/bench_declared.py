"""What reading declared environments (requirement files, Dockerfiles, conda environment files, pyproject.toml)
costs a scan of verl 0.9.1: this checkout against a base revision, in one run, on two trees.

    python bench/bench_declared.py [--base REV] [--reps 7] [--sdist]

Both revisions are installed (not editable) into temporary directories and run with this venv's Python, so they
differ only in rlcompat's code. Trees: the installed verl package (what bench_scan.py measures; it holds no
declared-environment file), and with --sdist also the verl 0.9.1 sdist from PyPI (its requirement files,
Dockerfiles and pyproject.toml are what the new front ends read). Each run is a fresh process with --no-cache;
revisions alternate. Prints median and spread of wall time per tree and revision, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def install(rev: str | None, into: Path) -> None:
    src = into / "src"
    if rev is None:
        shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv*", ".git", "bench", "*.egg-info", "build"))
    else:
        src.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(into / "site"), str(src)], check=True)


def verl_package() -> Path:
    import verl

    return Path(os.path.dirname(verl.__file__))


def verl_sdist(into: Path) -> Path:
    meta = json.load(urllib.request.urlopen("https://pypi.org/pypi/verl/json", timeout=60))
    url = next(u["url"] for u in meta["releases"]["0.9.1"] if u["packagetype"] == "sdist")
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "verl.tar.gz"
    from declared_corpus import file_url

    urllib.request.urlretrieve(file_url(url), archive)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return next(p for p in into.iterdir() if p.is_dir() and p.name.startswith("verl"))


def run(site: Path, tree: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(site))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rlcompat", "scan", str(tree), "--target", "sm61", "--no-cache",
                    "--exit-zero"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tree)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="46a0093")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--sdist", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        install(args.base, tmp / "before")
        install(None, tmp / "after")
        trees = {"verl 0.9.1 package": tmp / "pkg"}
        shutil.copytree(verl_package(), trees["verl 0.9.1 package"])
        if args.sdist:
            trees["verl 0.9.1 sdist"] = verl_sdist(tmp / "sdist")
        for name, tree in trees.items():
            declared = [p for p in tree.rglob("*") if p.is_file() and _declared(p)]
            times = {"before": [], "after": []}
            run(tmp / "before" / "site", tree)  # warm the file cache
            for _ in range(args.reps):
                for rev in ("before", "after"):
                    times[rev].append(run(tmp / rev / "site", tree))
            b, a = statistics.median(times["before"]), statistics.median(times["after"])
            print(f"{name}: {len(declared)} declared-environment files; before ({args.base}) {b:.3f} s "
                  f"[{min(times['before']):.3f}-{max(times['before']):.3f}], after {a:.3f} s "
                  f"[{min(times['after']):.3f}-{max(times['after']):.3f}], ratio {a / b:.3f}")


def _declared(path: Path) -> bool:
    from rlcompat.pipeline.discovery import declared_language

    return declared_language(str(path)) is not None


if __name__ == "__main__":
    main()
