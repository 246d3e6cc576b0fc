"""What a launch script's run reaches in the framework it launches, and the hazards there that no override changes.

A verl command in a scanned script runs the verl of the script's tree (rlcompat/knowledge/identity.py): the tree's own package
(a release or a fork), else the installed distribution the script uses, where the tree pins none or pins the
installed version. The command's overrides, with `[default_run]`'s `values` for the keys it leaves unset, select
`[[run_option]]` rows of that package's knowledge (run_scope.selection); a row's `code` names functions of the
package the run executes whose hazards no override changes (verl 0.9.1 loads the critic's value-head model with
FlashAttention-2 written in the call). The findings the same pipeline reports inside those functions are reported
again at the command, naming their file:line and what fixes them. For a fork, whose config no release's knowledge
describes, the findings of the config the entry point composes (`[default_run]` `config`) on keys the command does
not override are reported there too: a script is never clean while the run it launches cannot start on the target.
A recipe's entry point beside the package (`python3 -m recipe.dapo.main_dapo`, rlcompat/analysis/recipe_entry.py) is
such a run too, with its own composed config's values, and the rows whose classes its module takes from the package.

The framework's files are checked by the scan's own Checker (its result cache answers a file checked before); a
file the scan itself checked is reported where it is, not again. verl is never imported: the installed package is
found through its import spec, which locates a top-level package without running it.
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache

from rlcompat.knowledge import identity, verl_config
from rlcompat.analysis import run_config, run_scope
from rlcompat.pipeline import suppressions
from rlcompat.pipeline.scanned_file import ScannedFile
from rlcompat.findings import FileResult, Finding, Location
from rlcompat.pipeline.source import text_of
from rlcompat.lang.textpos import LineIndex

SCRIPT_LANGUAGES = ("shell",)
CONFIG_LANGUAGES = ("yaml",)
# Files whose commands are shell code inside another syntax (lang/dockerfile.py, lang/jobspec.py): what their verl
# commands' runs reach is reported as a script's is, at the file's own lines.
HOLDING_LANGUAGES = ("dockerfile", "jobspec")


def add_reached(checker, results: list[FileResult], texts: dict[str, str] | None = None, check=None) -> None:
    """Add to each launch script's result the findings its runs reach in the framework they launch. `texts`: a
    script's text where it is not what is on disk (`fix --diff`: the fixed text, never written); `check(path,
    language) -> FileResult`: how a framework file is checked (default `checker.check_file`; `matrix` answers every
    target from one parse)."""
    scanned = {os.path.abspath(r.path) for r in results}
    checked = _Checked(check or checker.check_file)
    launches = [r for r in results if r.language in SCRIPT_LANGUAGES and r.error is None]
    for result in results:
        if result.language in CONFIG_LANGUAGES and result.error is None:
            _add_handles(checker, result, scanned, checked, launches)
    for result in results:
        if result.language not in SCRIPT_LANGUAGES + HOLDING_LANGUAGES or result.error is not None:
            continue
        text = (texts or {}).get(result.path)
        if text is None:
            text = text_of(result.path, result.language)
        if text is None or not _may_launch(text):
            continue
        if result.language in SCRIPT_LANGUAGES:
            extra = reached_findings(checker, result.path, text, scanned, checked, result.findings)
            extra += users_config_findings(checker, result.path, text, scanned, checked)
        else:
            extra = _held_findings(checker, result, text, scanned, checked)
        if not extra:
            continue
        found = suppressions.find(text, result.language)
        kept, suppressed = suppressions.apply(extra, found)
        result.suppressed += suppressed
        own = [f for f in result.findings if not _settled(checker, f, found)] if suppressed else result.findings
        result.findings = sorted(own + kept, key=Finding.sort_key)
    if checker.cache is not None and checked.results:
        checker.cache.save()  # the framework files checked here, for the next run


@lru_cache(maxsize=1)
def _entry_words() -> tuple[str, ...]:
    """The first word of every entry-module prefix verl's knowledge lists ("verl", "recipe"): a command that runs
    none of them runs nothing of verl (a recipe's launch script may never name verl itself)."""
    words = {p.split(".", 1)[0] for v in verl_config.available_versions()
             for p in verl_config.load_version(v).entry_prefixes}
    return tuple(sorted(w for w in words if w))


def _may_launch(text: str) -> bool:
    return any(w in text for w in _entry_words())


def _held_findings(checker, result: FileResult, text: str, scanned: set[str], checked: "_Checked") -> list[Finding]:
    """`reached_findings` and `users_config_findings` for each piece of shell code a Dockerfile or a job spec holds,
    placed at the file's lines (lang/embedded.py)."""
    from rlcompat.lang import embedded
    from rlcompat.lang.frontends import frontend

    fe = frontend(result.language)
    try:
        blocks = fe.shell_blocks(fe.parse(text))
    except fe.PARSE_ERRORS:
        return []
    index = LineIndex(text)
    out: list[Finding] = []
    for block, _ in blocks:
        code = block.code
        if not _may_launch(code):
            continue
        found = reached_findings(checker, result.path, code, scanned, checked)
        found += users_config_findings(checker, result.path, code, scanned, checked)
        out += embedded.map_findings(block, found, index)
    return out


def _settled(checker, finding: Finding, found: list) -> bool:
    """Whether `finding` is one a rule over the suppressions (RLC001) reported about a suppression that has since
    silenced what this module reported at the command, and that no longer holds (the rule says: `still_holds`)."""
    rule = next((r for r in checker.suppression_rules if r.code == finding.code), None)
    if rule is None:
        return False
    at = (finding.location.line, finding.location.column)
    return any((s.line, s.column) == at and s.used and not rule.still_holds(finding, s) for s in found)


def reached_findings(checker, path: str, text: str, scanned: set[str], checked: "_Checked",
                     own: list[Finding] = ()) -> list[Finding]:
    """The findings at `path`'s verl commands for what their runs reach (module docstring). `own`: the script's own
    findings; a config key one of them already names at the command (a rule that read the fork's default) is not
    reported twice. The script is read again only where its package has something a run could reach: most have
    nothing, and a tree of a hundred launch scripts is not parsed twice for it."""
    from rlcompat.lang import shell

    tree = checker.tree_identity(path)
    knowledge_of_script = ScannedFile(path, tree, text)
    package = package_run(knowledge_of_script.framework(identity.VERL), tree.root)
    if package is None:
        return []
    package_identity = identity.verl_package(package, tree.root)
    knowledge = verl_config.knowledge_of(package_identity)
    if not any(m.rsplit(".", 1)[-1] in text for m in knowledge.run_entry) and not _names_recipe(text, knowledge, package):
        return []
    # Cheap answers first: whether a row's code is there at all (read with `ast`), and a fork's config findings (one
    # file per scan); a row's code is checked only once a command selects it.
    code_there = checked.once(("code", package), lambda: _code_there(package, knowledge, scanned))
    in_config = [] if package_identity.exact else checked.once(
        ("config", package), lambda: _config_hazards(package, knowledge, scanned, checked))
    if not code_there and not in_config:
        return []
    try:
        parsed = shell.parse(text)
        commands = shell.entry_commands(parsed, knowledge_of_script)
        arguments = shell.entry_arguments(parsed, knowledge_of_script)
    except shell.ShellSyntaxError:
        return []  # the script's own result says why it could not be read
    defaults = None if package_identity.exact else checked.once(("values", package),
                                                                lambda: fork_values(package, knowledge))
    index = LineIndex(text)
    out: list[Finding] = []
    for (entry, anchor, settings), words in zip(commands, arguments):
        recipe = None
        if not run_scope.runs_entry(knowledge, entry):
            given = run_config.flags([(w.text, w.dynamic) for w in words])
            recipe = checked.once(("recipe", package, entry, given),
                                  lambda e=entry, g=given: _recipe_run(package, knowledge, e, g))
            if recipe is None:
                continue
        run_defaults = recipe.values if recipe is not None else defaults
        overrides = {s.key: s.value for s in settings if s.prefix != "~"}
        at = _location(index, anchor.start, anchor.end)
        said = [f for f in own if f.location.line == at.line]
        tabled = checked.tabled  # told on a table of the fork's scanned config: reported there, not again
        hits = []
        for option in code_there:
            if recipe is not None and not recipe.maps(package, option.code):
                continue  # the recipe maps that role to a class of its own, which no row describes
            how = run_scope.selection(option, knowledge, overrides, run_defaults)
            if how is None:
                continue
            choice = None if package_identity.exact and recipe is None else _fork_choice(
                package, knowledge, option, overrides, run_defaults, recipe.file if recipe is not None else None)
            if choice is not None:  # the fork maps this role to a class of its own: its code, not the row's
                where = next((s.key_span for s in settings if s.key == choice.key and s.prefix != "~"), None)
                loc = at if where is None else _location(index, where.start, where.end)
                hits += [(f, _choice_message(f, option, choice, file, how, checker), loc)
                         for file, f in checked.once(("choice", option.name, choice.cls), lambda c=choice, o=option:
                                                     _class_hazards(o, package, c, scanned, checked))]
                continue
            hits += [(f, _code_message(f, option, file, function, how, knowledge, checker), at)
                     for file, function, f in checked.once(("findings", option), lambda o=option: _code_hazards(
                         o, package, scanned, checked))
                     if (os.path.abspath(file), f.location.line) not in tabled]
        config_hazards = in_config if recipe is None else checked.once(
            ("recipe-config", recipe.config), lambda r=recipe: _recipe_config_hazards(
                r, scanned, checked, package if package_identity.exact else None))
        hits += [(f, _config_message(f, file, key), at) for f, file, key in config_hazards
                 if not any(o == key or key.startswith(o + ".") for o in overrides)
                 and not any(o.code == f.code and key in o.message for o in said)]
        for finding, message, loc in hits:
            if checker.settings.is_selected(finding.code, path):
                out.append(Finding(finding.code, finding.name, message, path, loc, checker.target.name,
                                   finding.severity, None, index.line_text(loc.line)))
    return out


def of_view(view, ctx):
    """The command_config.CommandConfig of a command view (a rule's `view` and `ctx`), worked out once per file
    (`ctx.memo`); None for any other view."""
    if view.kind != "command" or not view.is_verl or view.anchor is None or ctx.scanned is None:
        return None
    if "command_config" not in ctx.memo:
        ctx.memo["command_config"] = _commands(ctx.path, ctx.source_text, ctx.scanned.tree, ctx.scanned)
    return next((c for c in ctx.memo["command_config"]
                 if (c.anchor.start, c.anchor.end) == (view.anchor.start, view.anchor.end)), None)


def set_in_users_config(view, ctx, key: str) -> str | None:
    """The config of the user's own (`--config-path`/`--config-name`) that sets `key` for this command, or None."""
    found = of_view(view, ctx)
    return found.composed.set_by.get(key) if found is not None and found.composed is not None else None


def _commands(path: str, text: str, tree, scanned) -> list:
    from rlcompat.analysis.command_config import script_commands

    return script_commands(path, text, tree, scanned, package_run(scanned.framework(identity.VERL), tree.root))


def users_config_findings(checker, path: str, text: str, scanned: set[str], checked: "_Checked") -> list[Finding]:
    """The findings of the configs of the user's own that `path`'s verl commands compose (`--config-path`/
    `--config-name`) where this scan does not check those files itself (`rlcompat scan run.sh`), reported at the
    command on the keys it does not override: the rules leave a key such a config sets to that file's line
    (set_in_users_config), so it is reported once, there or here."""
    if "config-name" not in text and "-cn" not in text:
        return []
    tree = checker.tree_identity(path)
    index = LineIndex(text)
    out: list[Finding] = []
    for command in _commands(path, text, tree, ScannedFile(path, tree, text)):
        if command.composed is None:
            continue
        overridden = set(command.overrides)
        at = _location(index, command.anchor.start, command.anchor.end)
        for file in command.composed.files:
            if os.path.abspath(file) in scanned:
                continue  # reported at its own lines
            result = checked.get(file, "yaml")
            keys = _yaml_keys_by_line(file)
            for f in result.findings if result is not None else ():
                key = keys.get(f.location.line, "")
                if key in overridden or command.composed.set_by.get(key, file) != file:
                    continue
                if checker.settings.is_selected(f.code, path):
                    out.append(Finding(f.code, f.name, _config_message(f, file, key), path, at, checker.target.name,
                                       f.severity, None, index.line_text(at.line)))
    return out


def _fork_choice(package: str, knowledge, option, overrides, defaults, entry_file: str | None = None):
    """The fork's own worker class for the role of `option`'s code, where its entry point (`entry_file`: a recipe's
    module; else the package's run entry) maps that role to another class for the run's values
    (rlcompat/analysis/fork_workers.py), else None."""
    from rlcompat.analysis import fork_workers

    classes = {code.partition(":")[2].split(".")[0] for code in option.code if "." in code.partition(":")[2]}
    if len(classes) != 1:
        return None
    values = {**(defaults or {}), **overrides}
    files = [entry_file] if entry_file else [os.path.join(package, *m.split(".")[1:]) + ".py" for m in knowledge.run_entry]
    for file in files:
        text = text_of(file, "python")
        if text is not None:
            return fork_workers.chosen_worker(text, classes.pop(), values)
    return None


def _class_hazards(option, package: str, choice, scanned, checked) -> list[tuple[str, Finding]]:
    """(file, finding) for each finding of the row's `codes` inside the fork's class `choice.cls`."""
    relative = os.path.join(*choice.module.split(".")[1:]) + ".py" if choice.module.count(".") else None
    file = os.path.join(package, relative) if relative else None
    lines = function_lines(file, choice.cls) if file else None
    if lines is None or os.path.abspath(file) in scanned:
        return []
    result = checked.get(file, "python")
    return [(file, f) for f in (result.findings if result is not None else ())
            if lines[0] <= f.location.line <= lines[1] and (not option.codes or f.code in option.codes)]


def _choice_message(f: Finding, option, choice, file: str, how: str, checker) -> str:
    return (f"this run selects {option.option} ({how}), and {choice.key}={choice.value} makes the fork's entry point "
            f"map that role to its own {choice.cls} (line {choice.line} of its main module), which reaches "
            f"{shown(file)}:{f.location.line}: {f.message}. This command sets nothing that changes it: "
            f"{_remedy(f, file, checker)}")


def _add_handles(checker, result: FileResult, scanned: set[str], checked: "_Checked",
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
        package = _package_of(path)
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
    lines = _yaml_tables_by_key(path)
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
                                              lambda h=handle: _entry_uses(package, knowledge, h.mapped, values, entry_file)):
            run = checked.once(("mapped-run", package, path, handle.mapped), lambda h=handle: _run_building(
                checker, launches, package, knowledge, path, h.mapped, values))
            if run is None:
                continue  # neither this config's values nor a scanned run of it build that role
            built_by = f" (built by the run {run} starts: its overrides make the entry point map {handle.mapped})"
        region = _region(package, handle.code)
        if region is None or os.path.abspath(region[0]) in scanned:
            continue  # the fork has no such function, or the scan reports its code where it is
        file, function, (first, last) = region
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
                       f"{handle.remedy[:1].upper()}{handle.remedy[1:]}; {_remedy(finding, file, checker)}")
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


_HYDRA_MAIN = re.compile(r"@hydra\.main\(([^)]*)\)")
_HYDRA_ARG = re.compile(r"""\b(config_path|config_name)\s*=\s*["']([^"']+)["']""")


@lru_cache(maxsize=32)
def fork_entry_configs(package: str) -> frozenset[str]:
    """The configs the entry points of a fork's package compose (`@hydra.main(config_path="config",
    config_name="mix_ppo_trainer")` in `mix_src/main_mix_ppo.py`: `mix_src/config/mix_ppo_trainer.yaml`), absolute;
    read as text, never imported."""
    found = set()
    for folder, dirs, names in os.walk(package):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("third_party", "__pycache__")]
        for name in names:
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            for call in _HYDRA_MAIN.finditer(text):
                args = dict(_HYDRA_ARG.findall(call.group(1)))
                if "config_name" in args:
                    found.add(os.path.abspath(os.path.join(folder, args.get("config_path", "."),
                                                           args["config_name"] + ".yaml")))
    return frozenset(found)


def _entry_uses(package: str, knowledge, dotted: str, values: dict[str, str | None],
                entry_file: str | None = None) -> bool:
    """Whether the package's entry module (`entry_file`: a recipe's module) builds `dotted` ("Role.RefPolicy") for
    the config's `values`: named in its code (comments do not count) and not only under `if` tests those values skip
    (fork_workers.role_built); True where the module cannot be read (no claim that the role is missing)."""
    from rlcompat.analysis import fork_workers

    files = [entry_file] if entry_file else [os.path.join(package, *m.split(".")[1:]) + ".py"
                                             for m in knowledge.run_entry]  # relative to the package
    for file in files:
        text = text_of(file, "python")
        if text is None:
            continue
        return fork_workers.role_built(text, dotted.rpartition(".")[2], values)
    return True


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
        if text is None or not _may_launch(text):
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


def _names_recipe(text: str, knowledge, package: str) -> bool:
    """Whether a script may run a recipe entry point beside `package` (a word of one of its folders' prefixes)."""
    from rlcompat.analysis import recipe_entry

    return any(os.path.basename(f) + "." in text or os.path.basename(f) + "/" in text
               for f in recipe_entry.recipe_folders(package, knowledge.entry_prefixes))


def _recipe_run(package: str, knowledge, entry: str, given):
    """The recipe run (rlcompat/analysis/recipe_entry.py) a command's entry starts with its Hydra config flags
    `given` (run_config.Flags), or None."""
    from rlcompat.analysis import recipe_entry

    if not knowledge.run_config:
        return None
    return recipe_entry.recipe_run(package, knowledge.entry_prefixes, os.path.join(package, knowledge.run_config),
                                   entry, given)


def _recipe_config_hazards(recipe, scanned, checked, release: str | None) -> list[tuple[Finding, str, str]]:
    """(finding, file, key) for each finding of a config a recipe's run composes (its own, the package's trainer
    config) that this scan does not check, on a key whose value in force that file sets. `release`: the package
    of exactly a known release, whose own configs' defaults the rules already read at the command from its
    knowledge (as for a main_ppo command): only the recipe's own files are read then."""
    inside = os.path.realpath(release) + os.sep if release else None
    out = []
    for file in recipe.files:
        if os.path.abspath(file) in scanned or (inside and os.path.realpath(file).startswith(inside)):
            continue
        result = checked.get(file, "yaml")
        if result is None:
            continue
        keys = _yaml_keys_by_line(file)
        out += [(f, file, keys[f.location.line]) for f in result.findings if f.location.line in keys
                and os.path.realpath(recipe.origins.get(keys[f.location.line], file)) == os.path.realpath(file)]
    return out


def _package_of(path: str) -> str | None:
    from rlcompat.knowledge.verl_config import package_root

    return package_root(os.path.dirname(os.path.abspath(path)))


def _code_there(package, knowledge, scanned) -> list:
    """The rows whose `code` the package has (a function of that name in that file) and this scan does not check."""
    return [option for option in knowledge.run_options
            if any(_region(package, code) is not None and os.path.abspath(_region(package, code)[0]) not in scanned
                   for code in option.code)]


def _region(package: str, code: str) -> tuple[str, str, tuple[int, int]] | None:
    """(file, function, its lines) of a row's "file:function", or None where the package has no such function."""
    relative, _, function = code.partition(":")
    file = os.path.join(package, relative)
    lines = function_lines(file, function) if function else ((1, 10**9) if os.path.isfile(file) else None)
    return None if lines is None else (file, function, lines)


def _code_hazards(option, package, scanned, checked) -> list[tuple[str, str, Finding]]:
    """(file, function, finding) for each finding of the row's `codes` inside its `code`."""
    out = []
    for code in option.code:
        region = _region(package, code)
        if region is None or os.path.abspath(region[0]) in scanned:
            continue
        file, function, (first, last) = region
        result = checked.get(file, "python")
        out += [(file, function, f) for f in (result.findings if result is not None else ())
                if first <= f.location.line <= last and (not option.codes or f.code in option.codes)]
    return out


def _code_message(f: Finding, option, file: str, function: str, how: str, knowledge, checker) -> str:
    where = f"{shown(file)}:{f.location.line}" + (f" ({function})" if function else "")
    avoid = f"; or avoid it: {option.avoid}" if option.avoid else ""
    closest = "" if knowledge.version_known else f" (as in verl {knowledge.version}, the closest release)"
    return (f"this run selects {option.option} ({how}), and reaches {where}{closest}: {f.message}. This command sets "
            f"nothing that changes it: {_remedy(f, file, checker)}{avoid}")


def _config_hazards(package, knowledge, scanned, checked) -> list[tuple[Finding, str, str]]:
    """(finding, file, key) for each finding of a fork's own primary config, which the entry point composes."""
    if not knowledge.run_config:
        return []
    file = os.path.join(package, knowledge.run_config)
    if not os.path.isfile(file) or os.path.abspath(file) in scanned:
        return []
    result = checked.get(file, "yaml")
    if result is None or not result.findings:
        return []
    keys = _yaml_keys_by_line(file)
    return [(f, file, keys[f.location.line]) for f in result.findings if f.location.line in keys]


def _config_message(f: Finding, file: str, key: str) -> str:
    how = f"; its fix there: {f.fix.description}" if f.fix else ""
    return (f"this run composes {shown(file)}:{f.location.line}, which sets `{key}` for it (this command does not "
            f"override it): {f.message}. Override `{key}` on this command{how}")


def fork_values(package: str, knowledge, run_config: str = "") -> dict[str, str | None]:
    """What a fork's own primary config sets (`[default_run]` `config`, or `run_config`: another entry config of the
    fork, relative to the package), where the release's defaults say nothing of the fork: composed by rlcompat/schema
    (its defaults list followed, as Hydra merges it), YAML null as "null", and `${other.key}` as that key's value in
    the composed config. Empty where the config cannot be read."""
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.hydra_static import compose_values, resolved

    if not (run_config or knowledge.run_config):
        return {}
    config = os.path.join(package, run_config or knowledge.run_config)
    try:
        found = compose_values(os.path.dirname(config), os.path.basename(config), bases=(os.path.dirname(package),))
    except SchemaUnread:
        return {}
    return resolved(found)


def _remedy(f: Finding, file: str, checker) -> str:
    if f.fix is None:
        return f"change {shown(file)}:{f.location.line} by hand"
    unsafe = " --unsafe-fixes" if f.fix.safety.value != "safe" else ""
    target = checker.target.name
    text = f"run `rlcompat fix {shown(file)} --target {target}{unsafe}` ({f.fix.description})"
    installed = installed_package()
    if installed and os.path.realpath(file).startswith(os.path.realpath(installed) + os.sep):
        # the distribution in site-packages: the command that keeps the originals and can be undone
        text += (f", or `rlcompat fix --installed verl --target {target}{unsafe}` for the whole installed package "
                 "(keeps the originals; `rlcompat restore verl` undoes it)")
    return text


def package_run(verl: identity.FrameworkIdentity, root: str) -> str | None:
    """The verl package directory a script's run imports: the tree's own, else the installed one where the tree
    declares nothing or pins the installed version. None where it cannot be told (a pin of another version)."""
    if verl.how in ("release", "fork") and verl.package:
        package = os.path.normpath(os.path.join(root, verl.package))
        return package if os.path.isdir(package) else None
    installed = identity.installed_version("verl")
    if verl.how == "installed" or (verl.how == "pinned" and verl.version == installed):
        return installed_package()
    return None


@lru_cache(maxsize=1)
def installed_package() -> str | None:
    """The installed verl package's directory, located by its import spec (which runs none of its code)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("verl")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return locations[0] if locations and os.path.isdir(os.path.join(locations[0], "trainer")) else None


@lru_cache(maxsize=64)
def function_lines(path: str, qualname: str) -> tuple[int, int] | None:
    """(first, last) line of the function `qualname` ("load_valuehead_model", "CriticWorker._build") in a Python
    file, or None where the file or the function is not there (a fork that has none)."""
    text = text_of(path, "python")
    if text is None:
        return None
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError):
        return None
    node = None
    for part in qualname.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            return None
        body = node.body
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
    return first, node.end_lineno or node.lineno


def _yaml_docs(path: str) -> list:
    """The documents of a YAML file read through the YAML front end; none where it is unreadable or not YAML."""
    from rlcompat.lang import yaml

    text = text_of(path, "yaml")
    try:
        return yaml.parse(text) if text is not None else []
    except yaml.YamlSyntaxError:
        return []


def _yaml_keys_by_line(path: str) -> dict[int, str]:
    return {e.key_mark[0] + 1: e.key for doc in _yaml_docs(path) for e in doc.entries}


def _yaml_tables_by_key(path: str) -> dict[str, int]:
    """Every key of a YAML file, mappings included, -> the line it is written on."""
    out: dict[str, int] = {}
    for doc in _yaml_docs(path):
        out.update((key, section.key_mark[0] + 1) for key, section in doc.sections.items())
        out.update((e.key, e.key_mark[0] + 1) for e in doc.entries)
    return out


class _Checked:
    """The framework files checked for one run of add_reached, each once."""

    def __init__(self, check) -> None:
        self.check = check
        self.results: dict[str, FileResult] = {}
        self.answers: dict[tuple, object] = {}  # what a package offers, worked out once per run
        self.tabled: set[tuple[str, int]] = set()  # (code file, line) told on a table of a scanned fork config

    def once(self, key: tuple, work):
        if key not in self.answers:
            self.answers[key] = work()
        return self.answers[key]

    def get(self, path: str, language: str) -> FileResult | None:
        if path not in self.results:
            self.results[path] = self.check(path, language)
        result = self.results[path]
        return None if result.error is not None else result



def _location(index: LineIndex, start: int, end: int) -> Location:
    line, column = index.position(start)
    end_line, end_column = index.position(end)
    return Location(line, column + 1, end_line, end_column + 1)


def shown(path: str) -> str:
    """A framework file as messages name it: relative to the working directory when inside it, else absolute."""
    full = os.path.abspath(path)
    relative = os.path.relpath(full, os.getcwd())
    return full if relative.startswith("..") else relative.replace(os.sep, "/")
