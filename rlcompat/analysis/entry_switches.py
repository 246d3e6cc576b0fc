"""Whether a value an entry point forces under one of its own switches reaches a run its tree launches.

`if args.packing_samples: args.flash_attn = True` (OpenRLHF's cli/train_ppo_ray.py) forces FlashAttention-2 only in a
run that passes `--packing_samples`, a switch the same parser leaves off (`action="store_true"`, a False or None
default). Where the tree holds launch files (shell scripts, Makefiles, Dockerfiles, YAML job specs, READMEs) that run
the entry module and none of them passes the switch, no run the tree ships reaches the forced value: it is not
reported, as a setting read only under an option no shipped entry config selects is not (verl's `[[unselected]]`).
A launch file that passes the switch, or a tree with none that runs the module (the user's own command decides),
keeps the finding; a command that passes the switch is judged where it is given.

Text is compared, not parsed: a launch file names the module when it spells its dotted name
(`-m openrlhf.cli.train_ppo_ray`) or its path from the package's parent (`openrlhf/cli/train_ppo_ray.py`), and passes
the switch when it spells the flag anywhere (a commented-out flag counts: the answer errs towards reporting). A
Markdown file counts by its shell code blocks only (README commands such as MiniMind's `python train_grpo.py`).
The Python side (a keyword a rule reports under `if args.use_flash_attn:`) is rlcompat/analysis/pyentry_switches.py.
"""

from __future__ import annotations

import os
import re

from rlcompat.knowledge.identity import tree_root
from rlcompat.analysis.tree_files import bounded_text, tree_files
from rlcompat.lang.languages import by_file_name

LAUNCH_LANGUAGES = frozenset({"shell", "makefile", "dockerfile", "yaml", "jobspec", "markdown"})
OFF_VALUES = frozenset({"", "false", "none", "0"})


def forced_in_no_launch(view, ctx, setting) -> bool:
    """For a `python-forced` setting: whether every switch its `if` tests is one the file's parser leaves off, and the
    tree's launch files run the entry point without passing any of them."""
    if setting.origin != "python-forced" or not ctx.path or not os.path.isfile(ctx.path):
        return False
    flags = _off_switch_flags(view, setting)
    if not flags:
        return False
    memo = ctx.memo.setdefault("entry_switches", {})
    if "launchers" not in memo:
        memo["launchers"] = launchers_of(os.path.abspath(ctx.path))
    running = memo["launchers"]
    ctx.record_reads([path for path, _ in running])
    if not running:
        return False
    spelled = re.compile("|".join(rf"(?<![\w-]){re.escape(f)}(?![\w-])" for f in sorted(flags)))
    return not any(spelled.search(text) for _, text in running)


def _off_switch_flags(view, setting) -> set[str]:
    """The flags (`--packing_samples`) of the guards of `setting` that the file declares with an
    off default; empty unless every switch-like guard is such a flag."""
    declared = {s.key.rsplit(".", 1)[-1]: s for s in view.settings if s.origin == "argparse-default"}
    flags: set[str] = set()
    for name in setting.guards:
        found = declared.get(name)
        if found is None:
            continue
        if (found.value or "").strip().lower() not in OFF_VALUES:
            return set()  # a guard the parser leaves on: the forced value is in every run
        flags |= {s for s in (found.written, "--" + found.key) if s}
    return flags


def _entry_names(path: str) -> tuple[tuple[str, ...], str]:
    """How a launch file names the entry point at `path` (its dotted module and its path from the package's parent,
    or its file name for a script outside a package), and the directory that holds its top-level package (or it)."""
    directory, stem = os.path.split(path)
    parts = [os.path.splitext(stem)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
    if len(parts) == 1:
        return (stem,), directory
    return (".".join(parts), "/".join(parts[:-1] + [stem])), directory


def launchers_of(path: str) -> list[tuple[str, str]]:
    """(path, text) of each launch file of the tree of `path` that names its entry point; [] where the tree is not
    the package's own project (the package sits elsewhere than at its root or in its `src/`: an installed or unpacked
    distribution, whose launchers are not there) or holds over tree_files.MAX_FILES launch files."""
    names, holder = _entry_names(path)
    root = tree_root(path)
    if len(names) > 1 and holder not in (root, os.path.join(root, "src")):
        return []
    # a script outside a package may be named by any path that ends in its file name (`examples/x/train_ppo.py`)
    before = r"(?<![\w./-])" if len(names) > 1 else r"(?<![\w.-])"
    named = re.compile("|".join(rf"{before}{re.escape(n)}(?![\w-])" for n in names))
    found = []
    for full in tree_files(root, _is_launch_file):
        if full is None:
            return []
        text = bounded_text(full)
        if text is None:
            continue
        if by_file_name(full, explicit=True).name == "markdown":
            text = _commands_of_markdown(text)
        if named.search(text):
            found.append((full, text))
    return found


def _is_launch_file(path: str) -> bool:
    # explicit: a README is read here though a directory scan does not check it (lang/markdown.py)
    language = by_file_name(path, explicit=True)
    return language is not None and language.name in LAUNCH_LANGUAGES


def _commands_of_markdown(text: str) -> str:
    """A Markdown file's shell blocks (its prose blanked): a README names an entry point in prose too (`only set
    loss_type in train_grpo.py`), which runs nothing."""
    from rlcompat.lang.markdown import shell_only  # loads the shell front end: only for a tree with a README

    return shell_only(text)
