"""Keys that look like switches but that the scanned verl version never reads (rlcompat/knowledge/data/verl/<version>.toml `[[dead]]`)."""

from __future__ import annotations

from typing import Callable

from rlcompat.analysis.confighelpers import training_engine, worker_of
from rlcompat.lang.settings import ConfigContext, ConfigView
from rlcompat.findings import Edit, FixSafety


def report_dead_keys(view: ConfigView, ctx: ConfigContext, suffix: str, value_map: Callable[[str], str]) -> None:
    """Report every dead key ending in `suffix`; in a script, rename it to the live key (with the mapped value)."""
    reported: set[int] = set()  # a config-group file mounted for several roles: one finding per line
    for dead in ctx.verl.dead.values():
        if not dead.key.endswith(suffix):
            continue
        setting = view.get(dead.key)
        role = "critic" if dead.key.startswith("critic.") else dead.key.split(".")[1]
        if setting is None or training_engine(view, role) != "fsdp":
            continue
        if dead.worker and dead.worker != worker_of(view, ctx.verl):
            continue
        if view.kind != "command" and live_at_another_mount(view, setting, ctx.verl):
            continue  # the line is read where the file is mounted for another trainer: not dead
        if view.kind != "command":
            if setting.key_span.start in reported:
                continue
            reported.add(setting.key_span.start)
        if view.kind == "command":
            shown, use = dead.key, dead.add_prefix + dead.use
        else:  # Hydra's ++ means nothing in YAML; a config-group file names keys relative to where it is mounted
            shown = view.full_key(setting)
            mount = next((m for m in view.mounts if m and dead.key == f"{m}.{setting.key}"), "")
            use = f"{dead.use[len(mount) + 1:]} in this file" if mount and dead.use.startswith(mount + ".") else dead.use
        if not ctx.verl.version_known:
            ctx.report(setting.key_span, unknown_version_message(shown, dead, use, ctx.verl))
            continue
        message = f"{shown} does nothing in {ctx.verl.label} for the FSDP engine ({dead.why}); use {use} instead"
        live_set = view.get(dead.use) is not None
        if view.kind == "command" and setting.word_span is not None and setting.value is not None and not live_set:
            value = value_map(setting.value)
            start = setting.key_span.start - len(setting.prefix)
            edits = [Edit(start, setting.key_span.end, dead.add_prefix + dead.use)]
            if value != setting.value:
                edits.append(setting.rewrite(value))
            ctx.report(setting.key_span, message, edits, FixSafety.SAFE, f"set {dead.use} instead")
        else:
            ctx.report(setting.key_span, message)


def live_at_another_mount(view: ConfigView, setting, knowledge) -> bool:
    """Whether a config-group file's line is a live verl setting under another of the file's mount points (verl
    0.6.1's engine/fsdp.yaml `use_torch_compile`: dead for the PPO trainer's legacy worker, read by the SFT engine
    trainer at `engine`): a line that some trainer reads is not reported as doing nothing."""
    paths = set(view.paths_of(setting)) - set(knowledge.dead)
    worker = worker_of(view, knowledge)
    return any(k.key in paths and (not k.worker or k.worker == worker) for k in knowledge.settings)


def unknown_version_message(shown: str, dead, use: str, knowledge) -> str:
    """What can be said about a key that is dead in some verl releases when the scanned tree's release is not known
    (a version not found, a fork, a version rlcompat has no knowledge of): the verdict of each release rlcompat
    knows, and no claim for this tree."""
    from rlcompat.knowledge.verl_config import other_verdicts

    found = (f"the scanned tree's verl ({knowledge.label}) is not a release rlcompat has knowledge of"
             if knowledge.detected or knowledge.identity is not None and knowledge.identity.how == "fork"
             else "the scanned tree's verl version was not found")

    verdicts = other_verdicts(dead.key)
    live = [v for v, state in verdicts if state == "live"]
    dead_in = [v for v, state in verdicts if state == "dead"]
    read = f"; it is read in verl {', '.join(live)}" if live else ""
    return (f"{shown}: {found}, so rlcompat cannot tell whether this key is read; "
            f"in verl {', '.join(dead_in)} it does nothing for the FSDP engine ({dead.why}){read}. "
            f"Where the version is one of {', '.join(dead_in)}, use {use}")
