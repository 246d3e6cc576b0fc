"""`rlcompat verify --load-check`: the fast answer for any tree, verl 0.9.1 or not. Each launch script of the tree
that runs a Hydra entry point of the tree has its config composed with its overrides by the tree's own loader
(rlcompat/schema/loadcheck.py: hydra-core in a child process, offline, on the CPU; no torch, verl or ray imported,
no tree code run). PASS: every such command loads; FAIL: one does not (the error says which key); exit 2 where
nothing could be checked (no such command, hydra-core not importable). It proves the config starts, not that
training runs: the step (`verify` without --load-check) is what runs verl 0.9.1's code."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rlcompat.verify.result import EXIT_ENV, EXIT_FAIL, EXIT_PASS

_SKIP_DIRS = {".git", "node_modules", ".venv", "__pycache__"}
_MAX_SCRIPTS = 500


def scripts_of(root: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        found.extend(Path(folder) / f for f in sorted(files) if f.endswith(".sh"))
        if len(found) >= _MAX_SCRIPTS:
            break
    return found[:_MAX_SCRIPTS]


def run_load_check(package: Path, script: str | None = None) -> dict:
    """The verdict as data: `commands` (script, line, config, error or None), `exit_code`, `note`."""
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.loadcheck import commands, compose_errors
    from rlcompat.schema.tree import hydra_config_of

    root = package.parent
    scripts = [Path(script)] if script else scripts_of(root)
    jobs, places, unread = [], [], []
    for path in scripts:
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            unread.append(f"{path}: not read ({type(exc).__name__})")
            continue
        for command in commands(text):
            try:
                config = hydra_config_of(str(root), str(package), command.words, str(path.parent.resolve()))
            except SchemaUnread as exc:
                unread.append(f"{path}: {exc}")
                continue
            if config is None:
                continue
            line = text.count("\n", 0, command.start) + 1
            if command.unread:  # a value Hydra would parse is not known here: no verdict on this command
                unread.append(f"{path}:{line}: {command.unread}; not load-checked")
                continue
            config_dir, name, overrides = config
            jobs.append((config_dir, name, list(overrides)))
            places.append((os.path.relpath(path, root), line,
                           "./" + os.path.relpath(os.path.join(config_dir, name), root) + ".yaml"))
    result = {"mode": "load-check", "package": str(package), "commands": [], "not_checked": unread}
    if not jobs:
        result.update(exit_code=EXIT_ENV, note="no launch script of this tree runs a Hydra entry point of the tree")
        return result
    answers = compose_errors(jobs)
    if isinstance(answers, str):
        result.update(exit_code=EXIT_ENV, note=f"load check not run: {answers}")
        return result
    result["commands"] = [{"script": s, "line": line, "config": config, "error": error}
                          for (s, line, config), error in zip(places, answers)]
    failed = [c for c in result["commands"] if c["error"]]
    result["exit_code"] = EXIT_FAIL if failed else EXIT_PASS
    result["note"] = (f"{len(failed)} of {len(answers)} command(s) do not load" if failed
                      else f"all {len(answers)} command(s) load with the tree's config")
    return result


def render(result: dict, as_json: bool) -> str:
    if as_json:
        return json.dumps(result, indent=2) + "\n"
    lines = [f"{c['script']}:{c['line']}: {'loads' if not c['error'] else 'FAILS: ' + c['error']} ({c['config']})"
             for c in result["commands"]]
    lines += [f"not checked: {n}" for n in result["not_checked"]]
    verdict = {EXIT_PASS: "PASS", EXIT_FAIL: "FAIL"}.get(result["exit_code"], "NOT RUN")
    lines.append(f"{verdict} (load check): {result['note']}; composing proves the config starts, not that training runs")
    return "\n".join(lines) + "\n"
