"""Which frameworks a command runs, so that a framework's flag and key knowledge applies only to its own commands.

A flag spelled like OpenRLHF's (`--vllm_num_engines`) in another project's launcher means whatever that launcher
makes of it: OpenRLHF's file:line says nothing about it. A command runs a framework when
1. its words name one of the framework's commands (`-m openrlhf.cli.train_ppo_ray`, `trl sft`, `tune run`: the
   `commands` of its knowledge files);
2. the Python program it starts (`python x.py`, `accelerate launch x.py`, `torchrun ... -m pkg.mod`; looked for
   beside the scanned file, at its tree's root and in the working directory) imports the framework or runs one of
   its commands;
3. neither names a framework other than a launcher's (`launcher = true` in its knowledge: accelerate, DeepSpeed,
   whose commands start another program), and the scanned tree's identity names the framework (its package, a fork
   of it, a pin or a requirement): the tree's own launchers run it.
A command that none of these attributes to a framework gets no finding from that framework's knowledge; the generic
rules and the net still judge its values by what they spell.
"""

from __future__ import annotations

import os
import re

from rlcompat.knowledge import frameworks as fk
from rlcompat.knowledge import identity
from rlcompat.lang.settings import ConfigContext, ConfigView

# Programs that start a Python program named by a later word (their own options come first).
LAUNCHERS = re.compile(r"(?:.*/)?(?:python[\d.]*|accelerate|torchrun|deepspeed|uv|ray)$")
MAX_PROGRAM_BYTES = 2_000_000
TREE_HOWS = ("release", "fork", "pinned", "declared")


def runs(view: ConfigView, ctx: ConfigContext, framework_name: str) -> bool:
    """Whether the command `view` runs `framework_name` (module docstring). Asked once per command and framework."""
    memo = ctx.memo.setdefault("command_framework", {})
    key = (id(view), framework_name)
    if key not in memo:
        memo[key] = _runs(view, ctx, framework_name)
    return memo[key]


def _runs(view: ConfigView, ctx: ConfigContext, framework_name: str) -> bool:
    named = named_frameworks(view)
    if framework_name in named:
        return True
    used = program_frameworks(view, ctx)
    if framework_name in used:
        return True
    launchers = {fw.name for fw in fk.frameworks() if fw.launcher}
    if used or named - launchers:
        return False
    found = ctx.framework(framework_name) if ctx.framework is not None else None
    return found is not None and found.how in TREE_HOWS


def own_entry(view: ConfigView, ctx: ConfigContext, framework_name: str) -> bool:
    """Whether the command starts a program of the framework's own checkout (slime's `python3 train.py`): the tree is
    exactly a release of the framework with its package inside, and the program the command starts imports it. Such
    a program parses the framework's own flags, so the defaults of flags it leaves out are the framework's; a user's
    program that imports a framework parses its own."""
    found = ctx.framework(framework_name) if ctx.framework is not None else None
    if found is None or found.how != "release" or not found.package or not found.exact:
        return False
    return framework_name in program_frameworks(view, ctx)


def named_frameworks(view: ConfigView) -> set[str]:
    """The frameworks whose commands the command's words name."""
    words = " ".join(view.command_words)
    return {fw.name for fw in fk.frameworks() if any(c in words for c in fw.commands)}


def program_frameworks(view: ConfigView, ctx: ConfigContext) -> set[str]:
    """The frameworks the Python program the command starts uses (imports, or runs a command of); empty where the
    command starts none or its file is not found."""
    program = program_file(view, ctx)
    text = _read(program) if program is not None else None
    if text is None:
        return set()
    ctx.record_reads([program])
    return {name for name in dict.fromkeys(fw.name for fw in fk.frameworks()) if identity.uses(text, name)}


def program_file(view: ConfigView, ctx: ConfigContext) -> str | None:
    """The Python file a command starts (`python x.py`, `accelerate launch --config_file c.yaml x.py`, `python -m
    pkg.mod`), where it exists beside the scanned file, at its tree's root or in the working directory."""
    words = list(view.command_words)
    if not words or not LAUNCHERS.match(words[0]):
        return None
    candidates: list[str] = []
    for i, w in enumerate(words[1:], 1):
        if w in ("-m", "--module") and i + 1 < len(words):
            module = words[i + 1].replace(".", "/")
            candidates = [module + ".py", module + "/__main__.py"]
            break
        if w.endswith(".py") and not w.startswith("-") and "=" not in w:
            candidates = [w]
            break
    if not candidates or not ctx.path:
        return None
    for root in dict.fromkeys((os.path.dirname(os.path.abspath(ctx.path)), identity.tree_root(ctx.path), os.getcwd())):
        for candidate in candidates:
            full = os.path.normpath(os.path.join(root, candidate))
            if os.path.isfile(full):
                return full
    return None


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_PROGRAM_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None
