"""Declared-environment files and launch scripts of RL and fine-tuning projects, from their PyPI sdists, for the
recall/precision figures of docs/coverage.md (issue 18). The files stay out of git (bench/.declared-corpus/).

    python bench/declared_corpus.py fetch              # download and extract what the sdists hold
    python bench/declared_corpus.py score LABELS.toml  # run rlcompat on them and compare with the labels

Labels are written by hand, from the facts (rlcompat/knowledge/data/*.toml), before rlcompat runs: for each file and target, the
codes a correct scan reports. `score` prints, per construct (rule code), true/false positives and false
negatives, recall and precision.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / ".declared-corpus"
PROJECTS = ["verl", "openrlhf", "trl", "llamafactory", "axolotl", "unsloth", "torchtune", "ms-swift", "deepspeed",
            "vllm", "sglang", "lmdeploy", "xtuner", "accelerate", "peft", "nemo-rl", "skyrl-train", "areal", "roll"]
WANTED = re.compile(r"(^|/)(requirements[^/]*\.txt|requirements/[^/]+\.txt|constraints[^/]*\.txt|[Dd]ockerfile[^/]*|"
                    r"[^/]*\.[Dd]ockerfile|environment[^/]*\.ya?ml|pyproject\.toml|[^/]+\.sh)$")
MAX_BYTES = 200_000


def fetch() -> None:
    CORPUS.mkdir(exist_ok=True)
    for project in PROJECTS:
        try:
            meta = json.load(urllib.request.urlopen(f"https://pypi.org/pypi/{project}/json", timeout=60))
        except Exception as exc:  # noqa: BLE001 - a project not on PyPI is skipped, said so
            print(f"{project}: not fetched ({exc})")
            continue
        sdist = next((u for u in meta["urls"] if u["packagetype"] == "sdist"), None)
        if sdist is None or sdist["size"] > 80_000_000:
            print(f"{project}: no sdist under 80 MB")
            continue
        data = urllib.request.urlopen(file_url(sdist["url"]), timeout=300).read()
        out = CORPUS / f"{project}-{meta['info']['version']}"
        kept = 0
        for name, blob in _members(sdist["filename"], data):
            inner = name.split("/", 1)[1] if "/" in name else name
            if WANTED.search(inner) and len(blob) <= MAX_BYTES:
                dest = out / inner
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(blob)
                kept += 1
        print(f"{project} {meta['info']['version']}: {kept} files")


def file_url(url: str) -> str:
    """PyPI's JSON may give file URLs relative to a mirror (`../../packages/packages/ab/cd/...`)."""
    if "://" in url:
        return url
    return "https://files.pythonhosted.org/packages/" + url.split("packages/packages/", 1)[-1].lstrip("/")


def _members(filename: str, data: bytes):
    if filename.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                if not info.is_dir():
                    yield info.filename, z.read(info)
        return
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                if f is not None:
                    yield m.name, f.read()


def score(labels_path: str) -> None:
    from rlcompat._toml import load_toml_text
    from rlcompat.api import scan_paths
    from rlcompat.knowledge.targets import resolve_target

    labels = load_toml_text(Path(labels_path).read_text())
    codes = labels["codes"]
    counts = {c: [0, 0, 0] for c in codes}  # tp, fp, fn
    details = []
    for target_name, files in labels["targets"].items():
        target = resolve_target(target_name)
        paths = [str(CORPUS / f) for f in files]
        report = scan_paths(paths, target)
        found: dict[str, set[str]] = {f: set() for f in files}
        for finding in report.findings:
            rel = Path(finding.path).resolve().relative_to(CORPUS.resolve()).as_posix()
            if finding.code in codes:
                found.setdefault(rel, set()).add(finding.code)
        for f, expected in files.items():
            got, want = found.get(f, set()), set(expected)
            for c in codes:
                if c in got and c in want:
                    counts[c][0] += 1
                elif c in got:
                    counts[c][1] += 1
                    details.append(f"FP {target_name} {c} {f}")
                elif c in want:
                    counts[c][2] += 1
                    details.append(f"FN {target_name} {c} {f}")
    print("| construct | rule | labelled hazards | found | false positives | recall | precision |")
    print("|---|---|---|---|---|---|---|")
    for c, (tp, fp, fn) in counts.items():
        recall = f"{tp / (tp + fn):.2f}" if tp + fn else "n/a"
        precision = f"{tp / (tp + fp):.2f}" if tp + fp else "n/a"
        print(f"| {codes[c]} | {c} | {tp + fn} | {tp} | {fp} | {recall} | {precision} |")
    print("\n".join(details))


if __name__ == "__main__":
    if sys.argv[1:2] == ["fetch"]:
        fetch()
    elif sys.argv[1:2] == ["score"] and len(sys.argv) == 3:
        score(sys.argv[2])
    else:
        sys.exit(__doc__)
