"""How well `rlcompat scan --run` tells the findings a run reaches: its static answer against what a traced run
executed, and the size of `fix --run --minimal`'s diff against a full `fix`, on a copy of the installed verl 0.9.1.

    python bench/run_scope_precision.py [--truth bench/run_scope_truth.toml | --truth VERIFY_TRACE.json]
                                        [--script fixtures/scripts/grpo_vllm_bf16/input.sh] [--target sm61]

The launch script is copied beside a copy of the package and fixed first (`rlcompat fix --unsafe-fixes` with the hf
rollout), as the traced run used it: what `fix` writes into the script (rollout.name=hf, mixed_precision) selects
code of the package. Compared: findings in Python files only (a trace says nothing of a config, which is read, not
executed). Precision = reached by the trace among those `--run` calls reached; recall = those `--run` calls reached
among the trace's reached. Truth is either the recorded list (a TOML `reached` list of package-relative
"file:line") or a `verify --trainer --trace --output-format json` report (its `trace` lists:
bench/results/trace_grpo_verl091_sm61.json), with which `fix --run --minimal --trace` is measured too.

Runs measured (docs/run-scope.md, *Measured*): in-sample, the seeds' GRPO script (the default) and it with
algorithm.adv_estimator=gae (truth trace_grpo_/trace_ppo_verl091_sm61.json); out of sample, two of verl's own example
scripts, passed with --script from a checkout of volcengine/verl (b178a3cd): examples/rloo_trainer/run_qwen2-7b.sh
(trace_rloo_verl091_sm61.json) and examples/ppo_trainer/run_deepseek7b_llm.sh with the three keys verl 0.9.1's
config lacks moved or dropped (trace_ppo_deepseek_verl091_sm61.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def installed_verl() -> Path:
    out = subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                          "print(u.find_spec('verl').submodule_search_locations[0])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def truth(path: Path) -> set[str]:
    if path.suffix == ".json":
        return {r["location"] for r in json.loads(path.read_text())["trace"]["reached"]}
    import tomllib

    return set(tomllib.loads(path.read_text())["reached"])


def cli(*args, cwd: Path) -> tuple[int, str, str]:
    env = {**os.environ, "NO_COLOR": "1", "RLCOMPAT_HF_ROLLOUT": "1"}
    proc = subprocess.run([sys.executable, "-m", "rlcompat", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        sys.exit(f"rlcompat {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc.returncode, proc.stdout, proc.stderr


def diff_size(diff: str) -> tuple[int, int]:
    """(files, changed lines) of a unified diff: `-` lines, each a place `fix` rewrote."""
    files = sum(1 for line in diff.splitlines() if line.startswith("+++ "))
    places = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    return files, places


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--truth", default=str(REPO / "bench" / "run_scope_truth.toml"))
    ap.add_argument("--script", default=str(REPO / "fixtures" / "scripts" / "grpo_vllm_bf16" / "input.sh"))
    ap.add_argument("--target", default="sm61")
    args = ap.parse_args()
    reached_truth = truth(Path(args.truth))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(installed_verl(), root / "verl", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(args.script, root / "run.sh")
        shutil.copy(args.script, root / "pristine.sh")
        cli("fix", "run.sh", "--target", args.target, "--unsafe-fixes", "--no-cache", cwd=root)
        _, out, _ = cli("scan", "--run", "run.sh", "--target", args.target, "--output-format", "json", "--no-cache",
                     cwd=root)
        doc = json.loads(out)
        package = str((root / "verl").resolve()) + os.sep

        def where(f) -> str:
            return f"{os.path.realpath(os.path.join(root, f['path']))[len(package):]}:{f['line']}"

        python = [f for f in doc["findings"] if f["path"].endswith(".py")
                  and os.path.realpath(os.path.join(root, f["path"])).startswith(package)]
        said = {where(f) for f in python if f["reached"]}
        hit = said & reached_truth
        print(f"run: {doc['run']}")
        print(f"package findings in Python files: {len(python)}; --run reached: {len(said)}; trace reached: "
              f"{len(reached_truth)}")
        print(f"precision {len(hit) / len(said):.2f} ({len(hit)}/{len(said)}), recall "
              f"{len(hit) / len(reached_truth):.2f} ({len(hit)}/{len(reached_truth)})")
        for w in sorted(said - reached_truth):
            print(f"  reached by --run, not by the trace: {w}")
        for w in sorted(reached_truth - said):
            print(f"  reached by the trace, not by --run: {w}")
        by_reason: dict[str, int] = {}
        for f in doc["findings"]:
            if not f["reached"]:
                by_reason[f["not_reached"]["reason"]] = by_reason.get(f["not_reached"]["reason"], 0) + 1
        print(f"all findings: {len(doc['findings'])}, reached {doc['summary']['findings']}, not reached "
              f"{doc['summary']['not_reached']} {by_reason}")
        runs = [("full fix --run", ()), ("fix --run --minimal", ("--minimal",))]
        if args.truth.endswith(".json"):  # a verify --trace report: what --minimal --trace keeps
            runs.append(("fix --run --minimal --trace", ("--minimal", "--trace", str(Path(args.truth).resolve()))))
        for name, extra in runs:
            _, diff, said = cli("fix", "--run", "pristine.sh", "--target", args.target, "--unsafe-fixes", "--diff",
                          "--no-cache", *extra, cwd=root)
            files, places = diff_size(diff)
            would = next((line for line in said.splitlines() if line.startswith("Would fix")), "")
            print(f"{name} of the pristine script and package: {places} changed lines in {files} files ({would})")


if __name__ == "__main__":
    main()
