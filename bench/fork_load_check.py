"""Configurations broken by `rlcompat fix` (issue 26): does each fork's own config still load after the fix?

    .venv/bin/python bench/fork_load_check.py                  # every corpus it can check, print the table
    .venv/bin/python bench/fork_load_check.py --corpus fork-prime

For each coverage corpus (bench/coverage/labels) that carries a verl-style Hydra entry config (an included
`.../trainer/config/ppo_trainer.yaml`) and launch scripts that run `verl.trainer.main_ppo`, the config is composed
the way the fork's main_ppo.py does before it starts any worker: Hydra compose of that config directory with the
script's command-line overrides, then OmegaConf.resolve. Offline, on the CPU, without importing verl, torch or ray:
only hydra-core and omegaconf from .venv (rlcompat's dev environment), not the fork's own pins.

This is done on the corpus as downloaded ("before") and, for each of sm61/sm75 with safe and with unsafe fixes, on a
fresh copy after `rlcompat fix --target T [--unsafe-fixes] FILES...` over the corpus' included files ("after").
A configuration that loaded before and fails after is one that `fix` broke.

Shell variables in the scripts ($MODEL_PATH, ${N}, $(...)) are replaced by a placeholder string: they are paths,
names and sizes, and a load check needs their keys, not their values. `$@` (extra user arguments) is dropped.

Recipe corpora whose launch scripts run an entry point of the tree that parses its options with HfArgumentParser/
TrlParser over the tree's dataclasses get the same before/after table from `fix`'s static parse of the command
(rlcompat/schema/loadcheck.py `parse_error`: an option no field declares, a value a bool or Literal field refuses);
importing the dataclasses to parse for real would run the recipe's code and its dependencies.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


def _coverage_bench():
    """bench/coverage.py (corpus download, include lists), under its own name: `coverage` may be coverage.py's."""
    name = "coverage_bench"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / "coverage.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


coverage = _coverage_bench()

ENTRY_CONFIG = "ppo_trainer"
ENTRY_MODULE = "verl.trainer.main_ppo"
RUNS = (("sm61", False), ("sm61", True), ("sm75", False), ("sm75", True))


@dataclass
class Launch:
    script: str  # path inside the corpus
    index: int  # which main_ppo command of the script (0-based)
    overrides: list[str]


def main_ppo_overrides(text: str) -> list[list[str]]:
    """The Hydra overrides of every `... verl.trainer.main_ppo ARGS` command in a shell script, read the way `fix`'s
    load check reads them (rlcompat/schema/loadcheck.py: continuations joined, variables as a placeholder)."""
    from rlcompat.schema.loadcheck import commands
    from rlcompat.schema.tree import read_command

    out = []
    for command in commands(text):
        if ENTRY_MODULE in command.words:
            launch = read_command(command.words)
            out.append(list(launch.overrides) if launch is not None else [])
    return out


def compose_error(config_dir: Path, overrides: list[str]) -> str | None:
    """None when the fork's config composes and resolves with these overrides; else the error's first line. The
    composition is `fix`'s load check (rlcompat/schema/loadcheck.py), in a child of this interpreter."""
    from rlcompat.schema.loadcheck import compose_errors

    answer = compose_errors([(str(Path(config_dir).resolve()), ENTRY_CONFIG, list(overrides))])
    if isinstance(answer, str):
        raise SystemExit(f"load check not run: {answer}")
    return answer[0][:200] if answer[0] is not None else None


def entry_config_dir(files: list[str]) -> str | None:
    found = [f for f in files if f.endswith(f"trainer/config/{ENTRY_CONFIG}.yaml")]
    return str(Path(found[0]).parent) if len(found) == 1 else None


def launches(root: Path, files: list[str]) -> list[Launch]:
    out = []
    for rel in files:
        if rel.endswith(".sh"):
            for index, overrides in enumerate(main_ppo_overrides((root / rel).read_text(encoding="utf-8"))):
                out.append(Launch(rel, index, overrides))
    return out


def fixed_copy(root: Path, files: list[str], target: str, unsafe: bool, into: Path) -> tuple[Path, str]:
    """A copy of the corpus after `rlcompat fix`; returns it and the fix's exit status line."""
    copy = into / f"{target}-{'unsafe' if unsafe else 'safe'}"
    shutil.copytree(root, copy)
    command = [str(coverage.RLCOMPAT), "fix", "--no-cache", "--target", target] + (["--unsafe-fixes"] if unsafe else [])
    done = subprocess.run(command + files, cwd=copy, capture_output=True, text=True)
    changed = [f for f in files if (copy / f).read_bytes() != (root / f).read_bytes()]
    return copy, f"exit {done.returncode}, {len(changed)} file(s) changed"


def check(corpus: coverage.Corpus) -> list[str] | None:
    """Markdown table rows for one corpus, or None when it has no Hydra entry config and main_ppo launch script."""
    root = coverage.ensure_corpus(corpus)
    files = coverage.included_files(corpus)
    config_dir = entry_config_dir(files)
    runs = launches(root, files)
    if config_dir is None or not runs:
        return None
    rows = []
    with tempfile.TemporaryDirectory(prefix="fork-load-") as tmp:
        copies = {run: fixed_copy(root, files, run[0], run[1], Path(tmp)) for run in RUNS}
        for launch in runs:
            before = compose_error(root / config_dir, launch.overrides)
            cells = []
            for run in RUNS:
                copy, _ = copies[run]
                after_overrides = launches(copy, [launch.script])
                same = [x for x in after_overrides if x.index == launch.index]
                error = compose_error(copy / config_dir, same[0].overrides) if same else "launch command not found after fix"
                cells.append("loads" if error is None else f"**fails**: {error}")
            name = launch.script + (f" (command {launch.index + 1})" if launch.index else "")
            rows.append(f"| {corpus.name} | {name} | {'loads' if before is None else 'fails: ' + before} | "
                        + " | ".join(cells) + " |")
        rows.append(f"| {corpus.name} | (fix runs) | | " + " | ".join(copies[run][1] for run in RUNS) + " |")
    return rows


def parser_commands(root: Path, files: list[str]) -> list[tuple[str, int, object, tuple[str, ...]]]:
    """(script, index, parser, words) of every command of the included scripts that runs a dataclass-parser entry
    point of its tree."""
    from rlcompat.knowledge.identity import tree_root
    from rlcompat.schema.loadcheck import commands, dataclass_parser

    out = []
    for rel in files:
        if not rel.endswith(".sh"):
            continue
        path = root / rel
        tree = tree_root(str(path))
        for index, command in enumerate(commands(path.read_text(encoding="utf-8"))):
            parser = dataclass_parser(tree, command.words, str(path.parent))
            if parser is not None:
                out.append((rel, index, parser, command.words))
    return out


def parser_check(corpus: coverage.Corpus) -> list[str] | None:
    """Markdown rows for the corpus' dataclass-parser launch commands, or None when it has none."""
    from rlcompat.schema.loadcheck import commands, parse_error

    root = coverage.ensure_corpus(corpus)
    files = coverage.included_files(corpus)
    runs = parser_commands(root, files)
    if not runs:
        return None
    rows = []
    with tempfile.TemporaryDirectory(prefix="recipe-parse-") as tmp:
        copies = {run: fixed_copy(root, files, run[0], run[1], Path(tmp)) for run in RUNS}
        for rel, index, parser, words in runs:
            before = parse_error(parser, words)
            cells = []
            for run in RUNS:
                after = commands((copies[run][0] / rel).read_text(encoding="utf-8"))
                error = parse_error(parser, after[index].words) if index < len(after) else "command not found after fix"
                cells.append("parses" if error is None else f"**fails**: {error}")
            rows.append(f"| {corpus.name} | {rel} ({parser.shown}, static parse) | "
                        f"{'parses' if before is None else 'fails: ' + before} | " + " | ".join(cells) + " |")
        rows.append(f"| {corpus.name} | (fix runs) | | " + " | ".join(copies[run][1] for run in RUNS) + " |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", help="only these corpora (repeatable)")
    parser.add_argument("--parsers", action="store_true",
                        help="with --corpus: also the dataclass-parser launch commands of those fork/recipe corpora")
    args = parser.parse_args(argv)
    # Only corpora whose include list names an entry config: the others would be downloaded for nothing.
    corpora = [c for c in coverage.all_corpora() if any(f"config/{ENTRY_CONFIG}.yaml" in g for g in c.include)]
    recipes = {c.name for c in coverage.all_corpora() if c.name.startswith(("fork-", "recipe-"))}
    if args.corpus:
        unknown = set(args.corpus) - {c.name for c in corpora} - (recipes if args.parsers else set())
        if unknown:
            raise SystemExit(f"not a corpus with a {ENTRY_CONFIG}.yaml in its include list: {', '.join(sorted(unknown))}; "
                             "see bench/coverage/labels/")
        corpora = [c for c in corpora if c.name in args.corpus]
    print("| corpus | launch script | before fix | sm61 safe | sm61 unsafe | sm75 safe | sm75 unsafe |")
    print("|---|---|---|---|---|---|---|")
    skipped = []
    for corpus in corpora:
        try:
            rows = check(corpus)
        except coverage.CorpusUnavailable as note:
            skipped.append(str(note))
            continue
        if rows is None:
            skipped.append(f"{corpus.name}: no {ENTRY_CONFIG}.yaml with a {ENTRY_MODULE} launch script in its include list")
            continue
        print("\n".join(rows), flush=True)
    if not args.corpus or args.parsers:
        for corpus in coverage.all_corpora():
            if corpus.name in recipes and (not args.corpus or corpus.name in args.corpus):
                try:
                    rows = parser_check(corpus)
                except coverage.CorpusUnavailable as note:
                    skipped.append(str(note))
                    continue
                if rows:
                    print("\n".join(rows), flush=True)
    for note in skipped:
        print(f"not checked: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
