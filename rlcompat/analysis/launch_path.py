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

Where the run's package is and what it offers (its config's values, its entry points' roles, a row's code) is
rlcompat/analysis/run_package.py; the findings a package's own scanned config carries on its tables for what its code
writes (`[[handle]]`) are rlcompat/analysis/config_handles.py, called from `add_reached`.

The framework's files are checked by the scan's own Checker (its result cache answers a file checked before); a
file the scan itself checked is reported where it is, not again. verl is never imported: the installed package is
found through its import spec, which locates a top-level package without running it.
"""

from __future__ import annotations

import os

from rlcompat.knowledge import identity, verl_config
from rlcompat.analysis import run_config, run_scope
from rlcompat.analysis.config_handles import add_handles
from rlcompat.analysis.run_package import (code_region, code_there, fork_choice, fork_values, function_lines,
                                           may_launch, package_run, remedy, shown, yaml_keys_by_line)
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
            add_handles(checker, result, scanned, checked, launches)
    for result in results:
        if result.language not in SCRIPT_LANGUAGES + HOLDING_LANGUAGES or result.error is not None:
            continue
        text = (texts or {}).get(result.path)
        if text is None:
            text = text_of(result.path, result.language)
        if text is None or not may_launch(text):
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
        if not may_launch(code):
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
    rows_there = checked.once(("code", package), lambda: code_there(package, knowledge, scanned))
    in_config = [] if package_identity.exact else checked.once(
        ("config", package), lambda: _config_hazards(package, knowledge, scanned, checked))
    if not rows_there and not in_config:
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
        for option in rows_there:
            if recipe is not None and not recipe.maps(package, option.code):
                continue  # the recipe maps that role to a class of its own, which no row describes
            how = run_scope.selection(option, knowledge, overrides, run_defaults)
            if how is None:
                continue
            choice = None if package_identity.exact and recipe is None else fork_choice(
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
            keys = yaml_keys_by_line(file)
            for f in result.findings if result is not None else ():
                key = keys.get(f.location.line, "")
                if key in overridden or command.composed.set_by.get(key, file) != file:
                    continue
                if checker.settings.is_selected(f.code, path):
                    out.append(Finding(f.code, f.name, _config_message(f, file, key), path, at, checker.target.name,
                                       f.severity, None, index.line_text(at.line)))
    return out


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
            f"{remedy(f, file, checker)}")


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
        keys = yaml_keys_by_line(file)
        out += [(f, file, keys[f.location.line]) for f in result.findings if f.location.line in keys
                and os.path.realpath(recipe.origins.get(keys[f.location.line], file)) == os.path.realpath(file)]
    return out


def _code_hazards(option, package, scanned, checked) -> list[tuple[str, str, Finding]]:
    """(file, function, finding) for each finding of the row's `codes` inside its `code`."""
    out = []
    for code in option.code:
        found = code_region(package, code)
        if found is None or os.path.abspath(found[0]) in scanned:
            continue
        file, function, (first, last) = found
        result = checked.get(file, "python")
        out += [(file, function, f) for f in (result.findings if result is not None else ())
                if first <= f.location.line <= last and (not option.codes or f.code in option.codes)]
    return out


def _code_message(f: Finding, option, file: str, function: str, how: str, knowledge, checker) -> str:
    where = f"{shown(file)}:{f.location.line}" + (f" ({function})" if function else "")
    avoid = f"; or avoid it: {option.avoid}" if option.avoid else ""
    closest = "" if knowledge.version_known else f" (as in verl {knowledge.version}, the closest release)"
    return (f"this run selects {option.option} ({how}), and reaches {where}{closest}: {f.message}. This command sets "
            f"nothing that changes it: {remedy(f, file, checker)}{avoid}")


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
    keys = yaml_keys_by_line(file)
    return [(f, file, keys[f.location.line]) for f in result.findings if f.location.line in keys]


def _config_message(f: Finding, file: str, key: str) -> str:
    how = f"; its fix there: {f.fix.description}" if f.fix else ""
    return (f"this run composes {shown(file)}:{f.location.line}, which sets `{key}` for it (this command does not "
            f"override it): {f.message}. Override `{key}` on this command{how}")


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


