"""A verl package's own primary config, scanned: the hazards a function of the package writes itself for what a table
of that config stands for (`[[handle]]` rows of the release's knowledge: the model's `override_config`, an
`fsdp_config` without `mixed_precision`), reported on that table, citing the package's own file:line. Called by
rlcompat/analysis/launch_path.py's `add_reached` for every scanned YAML file; the package and its code are found
through rlcompat/analysis/run_package.py.
"""

from __future__ import annotations

import os

from rlcompat.knowledge import identity, verl_config
from rlcompat.analysis import run_scope
from rlcompat.analysis.run_package import (entry_uses, fork_entry_configs, fork_values, may_launch, package_of,
                                           package_run, code_region, remedy, shown, yaml_tables_by_key)
from rlcompat.pipeline import suppressions
from rlcompat.pipeline.scanned_file import ScannedFile
from rlcompat.findings import FileResult, Finding, Location
from rlcompat.pipeline.source import text_of
from rlcompat.lang.textpos import LineIndex


def add_handles(checker, result: FileResult, scanned: set[str], checked,
                 launches: list[FileResult] = ()) -> None:
    """A verl package's own primary config, scanned (a fork's, or a release's whose knowledge has `[[handle]]` rows):
    each hazard a function of the package writes itself for what a table of this config stands for (`[[handle]]`),
    reported on that table (the model's `override_config`, an `fsdp_config` without `mixed_precision`), citing the
    package's own file:line. A release's code is the one its knowledge describes (verl 0.4.1's workers write
    FlashAttention-2 and the bf16 param dtype as a fork of it does), so its config carries the same findings.
    A role the config's own values do not build (`mapped`: the reference policy, without use_kl_loss) counts where a
    scanned launch script's command composes this config with overrides that build it (`launches`)."""
    path = result.path
    tree = checker.tree_identity(path)
    verl = identity.verl_of_file(path, tree.get(identity.VERL))
    if verl.how not in ("fork", "release") or not verl.package:
        return
    whose = "the fork's code" if verl.how == "fork" else f"verl {verl.version}'s code"
    package = os.path.normpath(os.path.join(tree.root, verl.package)) if not os.path.isabs(verl.package) else verl.package
    if not os.path.isdir(package):
        package = package_of(path)
        if package is None:
            return
    knowledge = verl_config.knowledge_of(verl)
    here = [h for h in knowledge.handles if (h.config or knowledge.run_config)
            and os.path.abspath(os.path.join(package, h.config or knowledge.run_config)) == os.path.abspath(path)]
    config = knowledge.run_config
    entry_file = None  # the module that composes this config, where it is not the package's run entry
    beside = [h for h in here if h.config.startswith("../")]  # a recipe's own worker (`recipe/prime`), beside it
    if (not here or beside) and knowledge.run_config and "actor_rollout_ref" in (text_of(path, result.language) or ""):
        # the fork's own entry point (`@hydra.main(config_name="mix_ppo_trainer")` in its package), or a recipe's
        # beside the package (`recipe/dapo/main_dapo.py`, rlcompat/analysis/recipe_entry.py), composes this file as
        # the run's config, a trainer config like the primary one (its `actor_rollout_ref`): its tables stand for
        # the same worker code
        from rlcompat.analysis import recipe_entry

        entry_file = recipe_entry.recipe_configs(package, knowledge.entry_prefixes).get(os.path.abspath(path))
        if entry_file is not None or (not here and verl.how == "fork"
                                      and os.path.abspath(path) in fork_entry_configs(package)):
            here = beside + [h for h in knowledge.handles if not h.config]
            config = os.path.relpath(path, package)
    if entry_file is None:
        here = [h for h in here if h not in beside]  # no recipe module of the tree composes it: no run maps that worker
    # a config-group file the run config mounts (actor/dp_actor.yaml at `actor_rollout_ref.actor`): the run config's
    # handles whose tables it holds, read under its mount point
    prefixes = () if here or verl.how != "fork" else verl_config.group_prefixes(knowledge, package, path)
    if prefixes:
        here = [h for h in knowledge.handles if not h.config and any(t.startswith(p + ".") for t in h.tables
                                                                     for p in prefixes)]
    if not here:
        return
    values = checked.once(("values", package, config), lambda: fork_values(package, knowledge, config))
    lines = yaml_tables_by_key(path)
    text = text_of(path, result.language) or ""
    index = LineIndex(text)
    options = {o.name: o for o in knowledge.run_options}
    added: list[Finding] = []
    for handle in here:
        if handle.option:  # else the entry config this file is selects the code (the SFT trainer's, Megatron's)
            option = options.get(handle.option)
            if option is None or run_scope.selection(option, knowledge, {}, values) is None:
                continue
        built_by = ""
        if handle.mapped and not checked.once(("mapped", package, config, handle.mapped),
                                              lambda h=handle: entry_uses(package, knowledge, h.mapped, values, entry_file)):
            run = checked.once(("mapped-run", package, path, handle.mapped), lambda h=handle: _run_building(
                checker, launches, package, knowledge, path, h.mapped, values))
            if run is None:
                continue  # neither this config's values nor a scanned run of it build that role
            built_by = f" (built by the run {run} starts: its overrides make the entry point map {handle.mapped})"
        found_code = code_region(package, handle.code)
        if found_code is None or os.path.abspath(found_code[0]) in scanned:
            continue  # the fork has no such function, or the scan reports its code where it is
        file, function, (first, last) = found_code
        code = checked.get(file, "python")
        source = (text_of(file, "python") or "").splitlines()
        found = [f for f in (code.findings if code is not None else ())
                 if first <= f.location.line <= last and f.code in handle.codes
                 and (not handle.words or any(w in source[f.location.line - 1] for w in handle.words
                                              if f.location.line <= len(source)))]
        if not found:
            continue
        finding = min(found, key=lambda f: handle.codes.index(f.code))  # the row's first code: the value in force
        for table in handle.tables:
            local = next((table[len(p) + 1:] for p in prefixes if table.startswith(p + ".")), table)
            line = lines.get(local)
            if line is None or (handle.unless and f"{local}.{handle.unless}" in lines):
                continue
            where = f"{shown(file)}:{finding.location.line} ({function})"
            message = (f"{handle.what}{built_by}: {whose} decides it, not `{table}`: {where}: {finding.message}. "
                       f"{handle.remedy[:1].upper()}{handle.remedy[1:]}; {remedy(finding, file, checker)}")
            if checker.settings.is_selected(finding.code, path):
                checked.tabled.add((os.path.abspath(file), finding.location.line))
                at = Location(line, 1, line, len(index.line_text(line)) + 1)
                added.append(Finding(finding.code, finding.name, message, path, at, checker.target.name,
                                     finding.severity, None, index.line_text(line)))
    if added:
        found = suppressions.find(text, result.language)
        kept, suppressed = suppressions.apply(added, found)
        result.suppressed += suppressed
        result.findings = sorted(list(result.findings) + kept, key=Finding.sort_key)


def _run_building(checker, launches: list[FileResult], package: str, knowledge, config: str, dotted: str,
                  values: dict[str, str | None]) -> str | None:
    """Where ("scripts/train/train.sh:80") a verl command of a scanned launch script runs `package`, composes the
    config file `config` and, with its overrides over that config's `values`, makes the entry module surely build
    `dotted` ("Role.RefPolicy": every `if` on the way known to hold); None where no command does."""
    from rlcompat.analysis import fork_workers
    from rlcompat.analysis.command_config import script_commands
    from rlcompat.lang import shell

    entry_texts = [text_of(os.path.join(package, *m.split(".")[1:]) + ".py", "python") for m in knowledge.run_entry]
    entry_text = next((t for t in entry_texts if t is not None), None)
    if entry_text is None:
        return None
    for result in launches:
        text = text_of(result.path, result.language)
        if text is None or not may_launch(text):
            continue
        tree = checker.tree_identity(result.path)
        view = ScannedFile(result.path, tree, text)
        if package_run(view.framework(identity.VERL), tree.root) != os.path.normpath(package):
            continue
        try:
            settings_at = {(a.start, a.end): s for _, a, s in shell.entry_commands(shell.parse(text), view)}
        except shell.ShellSyntaxError:
            continue
        for command in script_commands(result.path, text, tree, view, package):
            directory, name = command.composed.source if command.composed is not None else ("", "")
            if not name or os.path.realpath(os.path.join(directory, name + ".yaml")) != os.path.realpath(config):
                continue
            settings = settings_at.get((command.anchor.start, command.anchor.end), ())
            overrides = {s.key: s.value for s in settings if s.prefix != "~"}
            if fork_workers.role_surely_built(entry_text, dotted.rpartition(".")[2], {**values, **overrides}):
                return f"{shown(result.path)}:{LineIndex(text).position(command.anchor.start)[0]}"
    return None
