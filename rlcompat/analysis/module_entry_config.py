"""The config a launch command's Python module reads, where the framework names it by the module and the scanned
tree holds it (knowledge `module_config`).

align-anything's trainers (`deepspeed --module align_anything.trainers.text_to_text.ppo ...`) each read the YAML of
their module's name, align_anything/configs/train/text_to_text/ppo.yaml, and take the command's `--<name> <value>`
pairs as overrides of every key of that last name [S450]. A key the command does not pass runs at the value that file
in the tree holds, whatever release the checkout is: the value is read from the tree, not from a release's defaults.
Where the tree does not hold the file (the package installed elsewhere), nothing is claimed.
"""

from __future__ import annotations

import os

from rlcompat.analysis.hydra_entry_config import EntryConfig, composed
from rlcompat.lang.settings import ConfigContext, ConfigView


def module_run(view: ConfigView) -> str | None:
    """The Python module the command runs (`python -m m`, `deepspeed --module m`, `torchrun -m m`), else None."""
    words = view.command_words
    for i, word in enumerate(words[:-1]):
        if word in ("-m", "--module") and not words[i + 1].startswith("-"):
            return words[i + 1]
    return None


def tree_module_config(view: ConfigView, ctx: ConfigContext, fw) -> EntryConfig | None:
    """The config `fw`'s module that the command runs reads, from the tree's own file; None where the command runs no
    module under the framework's prefix, or the tree does not hold the file, or it cannot be read."""
    spec = fw.module_config
    module = module_run(view)
    if spec is None or module is None or not module.startswith(spec.prefix) or not ctx.path or not os.path.isfile(ctx.path):
        return None
    task = module[len(spec.prefix):]
    if not task or not all(part.isidentifier() for part in task.split(".")):
        return None
    relative = spec.path.format(task=task.replace(".", "/"))
    memo = ctx.memo.setdefault("module_entry_config", {})
    key = (fw.name, relative, os.path.dirname(os.path.abspath(ctx.path)))
    if key not in memo:
        memo[key] = composed(ctx, relative)  # (the command's `--key value` pairs are no Hydra words)
    return memo[key]


def overridden(view: ConfigView, name: str) -> bool:
    """Whether the command passes a flag that replaces the key `name` (dotted): its last part, or a `:`-path ending
    in it (`--train_cfgs:bf16`), dashes read as underscores [S450]."""
    leaf = name.rsplit(".", 1)[-1]
    for word in view.command_words:
        if not word.startswith("--"):
            continue
        flag = word[2:].split("=", 1)[0].replace("-", "_")
        if flag.rsplit(":", 1)[-1] == leaf:
            return True
    return False

