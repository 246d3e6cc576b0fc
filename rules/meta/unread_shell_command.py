from __future__ import annotations

import re

from rlcompat.analysis import confighelpers as h
from rlcompat.contract import Bad, ConfigRule, Good


def _watched_rules(target):
    """The other launch-script rules that apply to `target`: what an unread command could hide."""
    from rlcompat.rules import file_rules

    return [r for r in file_rules() if issubclass(r, ConfigRule) and not r.reads_unread and "shell" in r.languages
            and r.applies_to(target)]


class UnreadShellCommand(ConfigRule):
    code = "RLC002"
    name = "unread-shell-command"
    title = "Launch-script command the shell parser cannot read, mentioning what the rules check"
    what = (
        "Reports a command in a shell script (or a Markdown shell block) that bashlex cannot parse, when its text "
        "holds a word another rule looks for on this target (`bfloat16`, `flash_attn`, `main_ppo`, "
        "`use_torch_compile`, ...). Such a command is skipped and the rest of the script is still checked; this "
        "finding says where the skipped one is and why it was skipped. Commands without such a word are skipped "
        "silently."
    )
    why = (
        "A bf16 or FlashAttention override in a command rlcompat could not read would otherwise pass the gate "
        "unseen and fail at run time on the target: a command inside `select` or `coproc`, or a `[[ ... ]]` test continued over several lines."
    )
    fix_safety = (
        "No autofix. Check the command by hand for the target, then silence this finding with "
        "`# rlcompat: ignore[RLC002]` after the command's last line, or rewrite the command in a form the parser reads."
    )
    languages = frozenset({"shell", "markdown"})
    severity = "warning"
    reads_unread = True

    bad = (
        Bad("select opt in a b; do python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16; done\n",
            path="run.sh"),
        Bad("coproc python3 -m verl.trainer.main_ppo actor_rollout_ref.model.override_config.attn_implementation=flash_attention_2\n",
            path="run.sh"),
    )
    good = (
        Good("GPUS=(0 1 2 3)\necho ${GPUS[@]}\n", path="run.sh"),
        Good("[[ -f ckpt ]] && python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=float32\n", path="run.sh"),
        Good("coproc python3 -m verl.trainer.main_ppo a.b=1  # rlcompat: ignore[RLC002] checked by hand\n", path="run.sh"),
    )

    def __init__(self, target) -> None:
        super().__init__(target)
        # The words the watched rules trigger on: a command holding none of them cannot hide their hazards. An
        # instance attribute, because the runner reads `triggers` to decide which files to parse at all.
        self.triggers = tuple(sorted({t for r in _watched_rules(target) for t in r.triggers}))

    @classmethod
    def applies_to(cls, target) -> bool:
        return bool(_watched_rules(target))

    def check_config(self, view, ctx) -> None:
        if view.kind != "unread" or view.anchor is None:
            return
        command = ctx.source_text[view.anchor.start:view.anchor.end]
        # Name the word holding the most specific trigger: `bfloat16` over `dtype`, a hazard over `main_ppo`.
        hits = [(t in h.ENTRY_TRIGGERS, -len(t), command.find(t), t) for t in self.triggers if t in command]
        if not hits:
            return
        _, _, at, trigger = min(hits)
        word = re.search(rf"[\w.\-]*{re.escape(trigger)}[\w.\-]*", command[max(0, at - 200):]).group(0)
        why = re.sub(r"\s*\(position \d+\)", "", view.unread)
        ctx.report(
            view.anchor,
            f"command not checked: the shell parser cannot read it ({why}) and it mentions `{word}`; check it by hand "
            f"for {ctx.target.name}, then add `# rlcompat: ignore[RLC002]` after it",
        )
