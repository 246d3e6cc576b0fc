"""Record or compare rlcompat's findings and fixes, to prove a restructuring changed no behaviour.

    python bench/parity_check.py save  /tmp/i12-baseline   # before the change
    python bench/parity_check.py check /tmp/i12-baseline   # after: exit 1 and the differing outputs if any

What is recorded: `scan --output-format json` of the installed verl package and of fixtures/ at sm61, sm70, sm75
and sm86; `fix --unsafe-fixes` of copies of both at each target, as a unified diff of the rewritten files; and the
rule catalog (`rules`, `rule <code>` for each code). Paths are written relative to the scanned root, so the
copies' temporary folders do not show.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = ("sm61", "sm70", "sm75", "sm86")
RLCOMPAT = [sys.executable, "-m", "rlcompat"]


def _verl_root() -> Path:
    out = subprocess.run(
        [sys.executable, "-c", "import verl, os; print(os.path.dirname(verl.__file__))"],
        check=True, capture_output=True, text=True,
    )
    return Path(out.stdout.strip())


def _run(args: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(RLCOMPAT + args, capture_output=True, text=True, cwd=cwd)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"rlcompat {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def _relative_json(text: str, root: Path) -> str:
    return text.replace(str(root) + os.sep, "").replace(str(root), ".")


def _tree_diff(before: Path, after: Path) -> str:
    chunks = []
    for path in sorted(p for p in before.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = path.relative_to(before)
        old, new = path.read_bytes(), (after / rel).read_bytes()
        if old != new:
            chunks.extend(difflib.unified_diff(
                old.decode("utf-8", "surrogateescape").splitlines(keepends=True),
                new.decode("utf-8", "surrogateescape").splitlines(keepends=True),
                f"a/{rel}", f"b/{rel}",
            ))
    return "".join(chunks)


def _bytes(text: str) -> bytes:
    # Compared as bytes: reading the saved text back would turn a fixture's CRLF into LF and report a false change.
    return text.encode("utf-8", "surrogateescape")


def collect() -> dict[str, str]:
    outputs: dict[str, str] = {}
    trees = {"verl": _verl_root(), "fixtures": REPO / "fixtures"}
    for label, root in trees.items():
        for target in TARGETS:
            scan = _run(["scan", str(root), "--target", target, "--output-format", "json", "--no-cache"])
            outputs[f"scan-{label}-{target}.json"] = _relative_json(scan, root)
            with tempfile.TemporaryDirectory() as tmp:
                copy = Path(tmp) / label
                shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__", ".rlcompat_cache"))
                report = _run(["fix", str(copy), "--target", target, "--unsafe-fixes", "--no-cache",
                               "--output-format", "json"])
                outputs[f"fix-{label}-{target}.json"] = _relative_json(report, copy)
                outputs[f"fix-{label}-{target}.diff"] = _tree_diff(root, copy)
    outputs["rules.txt"] = _run(["rules"])
    codes = sorted({line.split()[0] for line in outputs["rules.txt"].splitlines()
                    if line.strip().startswith("RLC")})
    outputs["rule-each.txt"] = "".join(_run(["rule", code]) for code in codes)
    return outputs


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("save", "check"):
        print("usage: parity_check.py save|check FOLDER", file=sys.stderr)
        return 2
    mode, folder = sys.argv[1], Path(sys.argv[2])
    outputs = collect()
    if mode == "save":
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in outputs.items():
            (folder / name).write_bytes(_bytes(text))
        print(f"saved {len(outputs)} outputs to {folder}")
        return 0
    differing = []
    for name, text in outputs.items():
        saved = folder / name
        if not saved.exists() or saved.read_bytes() != _bytes(text):
            differing.append(name)
    missing = sorted(p.name for p in folder.iterdir() if p.name not in outputs)
    for name in differing:
        print(f"DIFFERS: {name}")
    for name in missing:
        print(f"MISSING: {name}")
    findings = sum(len(json.loads(outputs[n])["findings"]) for n in outputs if n.startswith("scan-"))
    print(f"{len(outputs) - len(differing)}/{len(outputs)} outputs identical ({findings} scan findings compared)")
    return 1 if differing or missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
