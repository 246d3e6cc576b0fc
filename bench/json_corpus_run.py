"""Robustness run of the JSON, notebook and TOML front ends: scan and fix every `.json`, `.ipynb` and `.toml` file
under the given directories (default: this checkout's .venv, whose packages ship many JSON and TOML files), each on
a copy in a temporary directory, checked directly through the engine (the discovery skip list hides none; a
`pyproject.toml` goes to its own front end, as discovery sends it). Checks, per file:

1. no exception out of rlcompat (a crash);
2. a changed file still loads (`json.loads`, tomllib) and has the original's structure (the same keys, in the
   same order, and array lengths: only scalar values differ);
3. a second fix changes nothing (idempotent).

    nice -n 10 .venv/bin/python bench/json_corpus_run.py [DIR ...] [--target sm61] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

from rlcompat._toml import load_toml_text
from rlcompat.config import Options
from rlcompat.pipeline.discovery import language_of
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.fixer import fix_file
from rlcompat.knowledge.targets import resolve_target

MAX_BYTES = 2 * 1024 * 1024


def files_under(roots: list[str]):
    for root in roots:
        for directory, _, names in os.walk(root):
            for name in names:
                if name.endswith((".json", ".ipynb", ".toml")):
                    path = os.path.join(directory, name)
                    if os.path.isfile(path) and os.path.getsize(path) <= MAX_BYTES:
                        yield path


def shape(value):
    """The structure of a JSON value with every scalar replaced by None."""
    if isinstance(value, dict):
        return [(k, shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    return None


def load(data: bytes, lang: str):
    text = data.decode("utf-8-sig")
    return load_toml_text(text) if lang in ("toml", "pyproject") else json.loads(text)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("roots", nargs="*", default=[os.path.join(os.path.dirname(__file__), "..", ".venv")])
    parser.add_argument("--target", default="sm61")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    checker = Checker(resolve_target(args.target), Options())
    counts = dict(files=0, findings=0, changed=0, unparsed=0, crashes=0, broken=0, non_idempotent=0)
    problems: list[str] = []
    by_language: dict[str, int] = {}
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for n, path in enumerate(sorted(files_under(args.roots))):
            if args.limit and n >= args.limit:
                break
            lang = language_of(path)
            # the copy keeps the file's name (pyproject.toml is recognised by name)
            os.makedirs(os.path.join(tmp, str(n)))
            work = os.path.join(tmp, str(n), os.path.basename(path))
            shutil.copyfile(path, work)
            counts["files"] += 1
            by_language[lang] = by_language.get(lang, 0) + 1
            try:
                result = checker.check_file(work, lang)
                counts["findings"] += len(result.findings)
                counts["unparsed"] += result.error is not None
                before = open(work, "rb").read()
                fix_file(checker, work, lang, unsafe=True, write=True)
                after = open(work, "rb").read()
                if after != before:
                    counts["changed"] += 1
                    try:
                        same = shape(load(after, lang)) == shape(load(before, lang))
                    except ValueError as exc:
                        same = False
                        problems.append(f"broken: {path}: {exc}")
                    if not same:
                        counts["broken"] += 1
                        problems.append(f"structure changed: {path}")
                    fix_file(checker, work, lang, unsafe=True, write=True)
                    if open(work, "rb").read() != after:
                        counts["non_idempotent"] += 1
                        problems.append(f"non-idempotent: {path}")
            except Exception:  # noqa: BLE001  (a crash is what this run looks for)
                counts["crashes"] += 1
                problems.append(f"crash: {path}: {traceback.format_exc(limit=3)}")
    print(json.dumps({**counts, "by_language": by_language, "seconds": round(time.time() - start, 1)}))
    for p in problems[:20]:
        print(p)
    return 1 if counts["crashes"] or counts["broken"] or counts["non_idempotent"] else 0


if __name__ == "__main__":
    sys.exit(main())
