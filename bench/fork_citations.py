"""No citation outside the scanned tree (issue 26): every `path:line` a finding's message names on a fork or recipe
corpus must be a file of that checkout with at least that many lines.

    .venv/bin/python bench/fork_citations.py                       # every fork-*/recipe-* corpus, sm61 and sm75
    .venv/bin/python bench/fork_citations.py --corpus recipe-r1-v

A cited path is looked up relative to the finding's tree root (rlcompat/knowledge/identity.py `tree_root`), the
finding's own folder and the checkout root; a path found in none, or with fewer lines than cited, is printed.
URLs are not citations of the tree and are skipped, and so are locations named after another repository at a
commit (`as in hkust-nlp/simpleRL-reason@cf1c785 fsdp_workers.py:203, dp_actor.py:95`): a source, not this tree.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fork_load_check import coverage  # noqa: E402  (bench/coverage.py, loaded under its own name)

CITED = re.compile(r"(?<![\w/.:-])((?:\.\.?/)*[\w.-]+(?:/[\w.-]+)*\.[A-Za-z]\w*):(\d+)")


def bad_citations(corpus: coverage.Corpus, target: str) -> tuple[int, list[str]]:
    from rlcompat.knowledge.identity import tree_root

    root = coverage.ensure_corpus(corpus)
    files = coverage.included_files(corpus)
    command = [str(coverage.RLCOMPAT), "scan", "--output-format", "json", "--no-cache", "--exit-zero", "--target", target]
    report = json.loads(subprocess.run(command + files, cwd=root, capture_output=True, text=True, check=True).stdout)
    checked, bad = 0, []
    for finding in report["findings"]:
        text = re.sub(r"https?://\S+", "", finding["message"])
        text = re.sub(r"[\w-]+/[\w.-]+@[0-9a-f]{7,40}[^;)]*", "", text)  # another repository's commit: a source
        own = (root / finding["path"]).resolve()
        bases = [Path(tree_root(str(own))), own.parent, root]
        for path, line in CITED.findall(text):
            checked += 1
            found = next((b / path for b in bases if (b / path).is_file()), None)
            lines = len(found.read_text(encoding="utf-8", errors="replace").splitlines()) if found else 0
            if found is None or int(line) > lines:
                bad.append(f"{corpus.name} {target} {finding['path']}:{finding['line']} {finding['code']}: cites "
                           f"{path}:{line} ({'no such file in the checkout' if found is None else f'{lines} lines'})")
    return checked, bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", help="only these corpora (repeatable)")
    args = parser.parse_args(argv)
    corpora = [c for c in coverage.all_corpora() if c.name.startswith(("fork-", "recipe-"))
               and (not args.corpus or c.name in args.corpus)]
    total, problems = 0, []
    for corpus in corpora:
        for target in coverage.TARGETS:
            checked, bad = bad_citations(corpus, target)
            total += checked
            problems += bad
    print("\n".join(problems))
    print(f"{total} citations checked in {len(corpora)} corpora x {len(coverage.TARGETS)} targets; "
          f"{len(problems)} outside the tree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
