"""Whether the declared environments `rlcompat fix` writes still install (issue 26, item 3), on the declared corpus
(bench/declared_corpus.py fetch) or any folder: the "still installs" count of docs/coverage.md.

    python bench/declared_installs.py [FOLDER ...]

For sm61 and sm70, safe and unsafe fixes, every file is fixed without writing (RLC6xx only) and each changed file is
checked with rules of its own, written apart from rlcompat/analysis/declared_install.py so that the count does not
grade that module with itself. A change is counted inconsistent when it makes true one of:
- another backend's file (a name or text that says NPU/Ascend/ROCm/XPU/CPU) was changed;
- a torch/torchvision/torchaudio pin's `+cuXXX` label names a CUDA variant that no PyTorch index of the file serves;
- an exact torch pin has no build in a variant the file's PyTorch indexes serve (rlcompat/knowledge/data/torch_wheels.toml);
- an `--extra-index-url` was added beside a torch requirement with no upper bound;
- a file pinning wheel hashes had a torch line or index changed;
- the URL of a wheel file on the PyPI index was rewritten;
- a `-r`/`-c` file it names, or the `uv.lock` beside a pyproject.toml, still names a variant the fix moved away from;
and it was not already true of the file before the fix. Prints, per target and mode, the files changed, the RLC601
fixes applied, RLC601 findings left without a fix, and the inconsistent changes (each listed).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/|test/)?(cu\d+)\b")
PIN = re.compile(r"\b(torch|torchvision|torchaudio)\s*(===|==|>=|<=|~=|!=|<|>)?\s*([0-9][0-9.]*)?(?:\+(cu\d+))?")
BACKEND_NAME = re.compile(r"(?:^|[._/-])(npu|ascend|rocm|xpu|cpu)(?:[._/-]|$)", re.I)
BACKEND_TEXT = re.compile(r"torch[-_]npu|ascend|rocm|intel[-_]extension[-_]for[-_]pytorch|whl/(?:cpu|xpu|rocm)", re.I)
INCLUDE = re.compile(r"^\s*(?:-r|--requirement|-c|--constraint)(?:\s+|\s*=\s*)(\S+)", re.M)


def _code(text: str) -> str:
    return "\n".join(line.split(" #", 1)[0] for line in text.splitlines() if not line.lstrip().startswith("#"))


def problems(path: Path, text: str) -> set[str]:
    from rlcompat.knowledge import torch_wheels

    body = _code(text)
    tags = set(INDEX.findall(body))
    found = set()
    for m in PIN.finditer(body):
        name, op, version, local = m.groups()
        if local and tags and local not in tags:
            found.add(f"{name}{op or ''}{version}+{local} without a {local} index (the file's: {sorted(tags)})")
        if name == "torch" and op in ("==", "===") and version and not local:
            known = any(v.ships(version) for v in torch_wheels.wheel_variants())
            for tag in tags:
                if known and torch_wheels.variant(version, tag) is None:
                    found.add(f"torch {version} has no {tag} build")
    if "--extra-index-url" in body and tags:
        for line in body.splitlines():
            m = re.match(r"\s*(?:-\s+)?['\"]?torch\b(?![-_\w])\s*([^;'\"]*)", line)
            if m and "==" not in m.group(1) and "<" not in m.group(1):
                found.add(f"`{line.strip()}` beside an extra index has no upper bound")
            for cmd in re.finditer(r"pip3?\s+install\b[^\n]*", line):
                words = cmd.group(0).split()
                if "--extra-index-url" in words and any(re.fullmatch(r"['\"]?torch['\"]?", w) for w in words):
                    found.add(f"`{cmd.group(0)}` installs torch unbounded beside an extra index")
    for m in INCLUDE.finditer(body):
        sibling = path.parent / m.group(1)
        if sibling.is_file():
            other = _code(sibling.read_text(errors="replace"))
            for tag in set(INDEX.findall(other)) | {t for *_, t in PIN.findall(other) if t}:
                if tags and tag not in tags:
                    found.add(f"{m.group(1)} names {tag}, the file's indexes are {sorted(tags)}")
    lock = path.parent / "uv.lock"
    if path.name == "pyproject.toml" and lock.is_file():
        for tag in set(INDEX.findall(lock.read_text(errors="replace"))):
            if tags and tag not in tags:
                found.add(f"uv.lock installs from {tag}, pyproject.toml from {sorted(tags)}")
    return found


def changed_lines(before: str, after: str) -> list[str]:
    a, b = before.splitlines(), after.splitlines()
    return [y for x, y in zip(a, b) if x != y] + b[len(a):]


def main(folders: list[str]) -> None:
    from rlcompat.api import fix_paths
    from rlcompat.config import Options
    from rlcompat.knowledge.targets import resolve_target

    folders = folders or [str(HERE / ".declared-corpus")]
    total = 0
    print("| target | fixes | files changed | RLC601 fixes applied | RLC601 left without a fix | inconsistent changes |")
    print("|---|---|---|---|---|---|")
    listed = []
    for target_name in ("sm61", "sm70"):
        for unsafe in (False, True):
            report = fix_paths(folders, resolve_target(target_name), Options(select=("RLC6",)), unsafe=unsafe,
                               write=False)
            changed = [x for x in report.fixes if x.changed]
            applied = [f for f in report.applied if f.code == "RLC601"]
            left = [f for f in report.remaining if f.code == "RLC601" and f.fix is None]
            bad = 0
            for x in changed:
                path = Path(x.path)
                new = problems(path, x.fixed) - problems(path, x.original)
                # (a pyproject.toml routes each extra to its own index: a CPU one beside a CUDA one is not a CPU file)
                if BACKEND_NAME.search(path.name) or (path.name != "pyproject.toml"
                                                      and BACKEND_TEXT.search(_code(x.original))):
                    new.add("another backend's file was changed")
                if re.search(r"--hash[=\s]|--require-hashes", x.original):
                    if any(PIN.search(line) or INDEX.search(line) for line in changed_lines(x.original, x.fixed)):
                        new.add("a hash-pinned file had torch or its index changed")
                if any(".whl" in line and INDEX.search(line) for line in changed_lines(x.original, x.fixed)):
                    new.add("a wheel file's URL was rewritten (the file exists only where it was)")
                if new:
                    bad += 1
                    listed.append(f"{target_name} {'unsafe' if unsafe else 'safe'} {x.path}: {'; '.join(sorted(new))}")
            total += bad
            print(f"| {target_name} | {'unsafe' if unsafe else 'safe'} | {len(changed)} | {len(applied)} | {len(left)} | {bad} |")
    print("\n".join(listed))
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
