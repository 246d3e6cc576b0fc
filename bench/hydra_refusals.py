"""Three answers to "does Hydra refuse this launch script's overrides?" on a folder of verl launch scripts run with
the installed verl (issue 27): a plain `rlcompat scan` (RLC004 findings), `rlcompat scan --run SCRIPT` (exit 2
naming the key) and `rlcompat verify VERL --load-check --script SCRIPT` (hydra-core itself composing the config
in a child process: the truth). Prints the counts and every script where they disagree.

    python bench/hydra_refusals.py DIR [--target sm61]

DIR: e.g. verl's examples/ (`git archive <commit> examples | tar -x -C DIR`, the repository's snapshot from the
`fetch` tool under /work/.mirror); corpora stay out of git. Only `*.sh` files are counted: a job file, Makefile,
notebook or Markdown block is judged by the same function (tests/test_hydra_refused_override.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def _cli(*args: str, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rlcompat", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=600)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--target", default="sm61")
    args = parser.parse_args()
    from rlcompat.analysis.run_package import installed_package
    from rlcompat.verify.load_check import run_load_check

    package = installed_package()
    if package is None:
        print("no installed verl", file=sys.stderr)
        return 2
    root = os.path.abspath(args.folder)
    scripts = sorted(p for p in Path(root).rglob("*.sh") if "main_ppo" in p.read_text("utf-8", "replace"))
    plain = _cli("scan", root, "--target", args.target, "--select", "RLC004", "--output-format", "json",
                 "--no-cache", cwd=root)
    flagged: dict[str, list[str]] = {}
    for f in json.loads(plain.stdout)["findings"]:
        key = f["message"].split("`")[1].lstrip("+").rstrip("=")  # `+K=` for a key the config holds: K
        flagged.setdefault(os.path.abspath(os.path.join(root, f["path"])), []).append(key)
    rows = []
    for script in scripts:
        run = _cli("scan", "--run", str(script), "--target", args.target, "--select", "RLC004", "--no-cache",
                   cwd=str(script.parent))
        refused = run.returncode == 2 and ("is no key of the config" in run.stderr or "already has" in run.stderr)
        run_key = run.stderr.split("`")[1].lstrip("+").rstrip("=") if refused else ""
        load = run_load_check(Path(package), str(script))
        errors = [c["error"] for c in load["commands"] if c["error"]]
        # the keys Hydra refuses: `Could not override 'K'` (no such key) and `Could not append to config. An item is
        # already at 'K'` (`+K=` for a key it holds), the refusals RLC004 reports
        hydra = [e.split("'")[1] for e in errors if "Could not override" in e or "Could not append" in e]
        keys = flagged.get(str(script), [])
        rows.append((script, keys, run_key, hydra, errors, load["exit_code"], load["not_checked"] or [load["note"]]))
    n = len(rows)
    print(f"{n} scripts run main_ppo")
    print(f"plain scan flags (RLC004): {sum(1 for r in rows if r[1])} scripts, {sum(len(r[1]) for r in rows)} overrides")
    print(f"scan --run refuses (exit 2, a refused key): {sum(1 for r in rows if r[2])}")
    print(f"verify --load-check: {sum(1 for r in rows if r[3])} fail with Could not override/append; "
          f"{sum(1 for r in rows if r[4] and not r[3])} fail otherwise; {sum(1 for r in rows if r[5] == 2)} not run")
    disagree = 0
    for script, keys, run_key, hydra, errors, code, why in rows:
        name = os.path.relpath(script, root)
        if code == 2:
            print(f"  not checked by verify: {name}: {why[0].split(': ', 1)[-1][:120]}; scan {keys}")
            continue
        if bool(keys) != bool(run_key) or (keys and run_key != keys[0]):
            disagree += 1
            print(f"  scan vs --run: {name}: scan {keys} --run {run_key!r}")
        if bool(keys) != bool(hydra) or (hydra and hydra[0] not in keys):
            disagree += 1
            print(f"  scan vs hydra: {name}: scan {keys} hydra {hydra} {errors[:1]}")
    print(f"disagreements: {disagree}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
