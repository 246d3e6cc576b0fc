"""What the config a launch script's verl command composes tells the rules about that command, worked out once per
script (and asked by `--run` for the same commands, so both give one answer):

- the overrides Hydra refuses before anything runs: `key=value` (no `+`) for a key the composed config does not
  have (`Could not override 'K'. To append to your config use +K=...`,
  https://hydra.cc/docs/advanced/override_grammar/basic/), and `+key=value` for a key it already holds a value at
  (`Could not append to config. An item is already at 'K'`, hydra-core 1.3.8 config_loader_impl.py:370-385: not
  where the value there is null or `???`, nor where the value added is a list or mapping, which Hydra merges; a
  `+key=` after the command's own `~key` or setting of it is not judged). A plain script scan reports each at the
  override (RLC004); `--run` refuses to judge such a run (rlcompat/analysis/run_model.py). Both ask `command_refusals`.
  A key is judged only where the run's verl is a package on disk that is exactly a release rlcompat knows (the
  tree's own, or the installed one the script uses: run_package.package_run), and its config composes completely
  (rlcompat/schema/hydra_static.py): then the key set is that config's, and a key not in it is refused. Anything
  else (a fork, a config named by a shell variable, a word with an expansion, a key without a dot, which may choose
  a config group) is not judged; a pinned release with no package on disk is judged by its knowledge alone.
- the keys a config of the user's own (`--config-path`/`--config-name`) sets: a rule that would add a key left at
  verl's default leaves it to that file's own line (launch_path.set_in_users_config), where a fix edits it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from rlcompat.analysis import run_config, run_scope
from rlcompat.knowledge import identity, verl_config


@dataclass(frozen=True)
class Refusal:
    """One override Hydra refuses, and what to write instead."""

    setting: object  # the override as the shell front end reads it (lang.settings.Setting: key, key_span, value)
    entry: str  # the entry point the command runs
    config: str  # the config file it composes
    version: str  # the verl release
    spelled: str = ""  # the key this release has for the same setting, where knowledge proves one
    spelled_why: str = ""  # how that is known
    free: str = ""  # the `{}` mapping the key would sit in (Hydra takes it with `+`), where there is one
    proof: str = ""  # where no package is on disk: the knowledge row (`[[absent]]`) that proves the key absent
    held: bool = False  # `+key=` for a key the config already holds (Hydra: Could not append to config)
    mapping: bool = False  # what it holds there is a mapping: `key=value` would replace it whole, so no fix

    @property
    def key(self) -> str:
        return self.setting.key

    def message(self) -> str:
        if self.held and self.mapping:
            return (f"`+{self.key}=` adds a key where the config {self.entry} composes has a mapping ({self.config}, "
                    f"verl {self.version}): Hydra stops the run before it starts (Could not append to config. An item "
                    f"is already at '{self.key}'); remove it, or set the keys inside `{self.key}` one by one")
        if self.held:
            where = f"; it is set at {self.proof}" if self.proof else ""
            return (f"`+{self.key}=` adds a key the config {self.entry} composes already has ({self.config}, verl "
                    f"{self.version}{where}): Hydra stops the run before it starts (Could not append to config. "
                    f"An item is already at '{self.key}'); drop the `+` to set it (`{self.key}=...`), or write `++{self.key}=...`")
        proof = f"; {self.proof}" if self.proof else ""
        head = (f"`{self.key}` is no key of the config {self.entry} composes ({self.config}, verl {self.version}{proof}): "
                f"Hydra stops the run before it starts (Could not override '{self.key}': the key is not in struct)")
        return f"{head}; {self.remedy()}"

    def remedy(self) -> str:
        if self.spelled:
            return f"this release spells it `{self.spelled}` ({self.spelled_why})"
        if self.free:
            return (f"`{self.free}` is a mapping verl reads whole, so add the key to it with `+{self.key}=...` "
                    "(Hydra's `+` adds a key)")
        return (f"remove it (this release has no such setting), or write `+{self.key}=...` if code of your own reads "
                "it (Hydra's `+` adds a key)")


def command_refusals(script: str, package: str, knowledge, entry: str, written: list[tuple[str, bool]], settings,
                     composed: run_config.Composed) -> list[Refusal]:
    """The overrides of one command (its `settings`, the words after its entry point as written) that the config it
    composes lacks, in the order written. `package` is the verl package the command runs, exactly `knowledge`'s
    release."""
    words = [t for t, dynamic in written if not dynamic]
    bases = (os.path.dirname(os.path.abspath(script)), os.path.dirname(os.path.realpath(package)))
    plain = [s for s in settings if not s.prefix and not s.flag]
    found = dict(run_config.absent(composed, [s.key for s in plain], words, bases))
    adds = _first_adds(settings, [w[1:].partition("=")[0] for w in words if w.startswith("~")])
    held = run_config.held(composed, [(s.key, s.value) for s in adds], words, bases)
    adding = {id(s) for s in adds}
    if not found and not held:
        return []
    config = os.path.join(*composed.source) + ".yaml"
    out = []
    for setting in settings:
        if id(setting) in adding and setting.key in held:
            out.append(Refusal(setting, entry, config, knowledge.version, held=True, mapping=held[setting.key]))
            continue
        schema = found.get(setting.key) if not setting.prefix and not setting.flag else None
        if schema is None:
            continue
        spelled = [(k, why) for k, why in verl_config.respelled(setting.key, knowledge) if schema.has(k)]
        key, why = spelled[0] if len({k for k, _ in spelled}) == 1 else ("", "")
        out.append(Refusal(setting, entry, config, knowledge.version, key, why, schema.open_parent(setting.key) or ""))
    return out


def _first_adds(settings, deleted: list[str]) -> list:
    """The `+key=value` settings with a literal value whose key no other word of the command touches (`deleted`:
    the keys of its `~key` words): after `~key` or `key=null` a `+key=` may well add, which the order of the
    overrides decides."""
    seen: set[str] = set(deleted)
    out = []
    for s in settings:
        if s.flag:
            continue
        touched = s.key in seen or any(s.key.startswith(k + ".") or k.startswith(s.key + ".") for k in seen)
        if s.prefix == "+" and s.value is not None and not touched:
            out.append(s)
        seen.add(s.key)
    return out


@dataclass(frozen=True)
class CommandConfig:
    """One verl command of a script: where its entry word is, the config it composes (None where nothing is known
    of it), and its refused overrides."""

    anchor: object  # lang.settings.Span of the entry word: a command view's `anchor`
    composed: run_config.Composed | None
    refusals: tuple[Refusal, ...] = ()
    overrides: tuple[str, ...] = ()  # the keys the command sets itself (`~key` deletions left out)


def script_commands(path: str, text: str, tree_identity, scanned, package: str | None) -> list[CommandConfig]:
    """A CommandConfig for each verl command of the script, whose run's verl is `package` (run_package.package_run;
    None: none on disk, then for a pinned release the refusals its knowledge proves). `scanned`: the script as the
    pipeline reads it (its identity of verl, the entry points it knows). The user's config files a command
    composes are recorded as read (`scanned.record_reads`): the answer depends on them."""
    from rlcompat.lang import shell
    from rlcompat.lang.settings import Span

    verl = scanned.framework(identity.VERL)
    package_identity = identity.verl_package(package, tree_identity.root)
    if package_identity is None:  # no package on disk: a pinned release's knowledge alone (`[[absent]]`)
        return _known_refusals(text, verl, scanned) if verl.exact else []
    knowledge = verl_config.knowledge_of(package_identity)
    try:
        parsed = scanned.derived(shell.SCRIPT_KIND, text, lambda: shell.parse(text))
        commands = shell.entry_commands(parsed, scanned)
        arguments = shell.entry_arguments(parsed, scanned)
    except shell.ShellSyntaxError:
        return []  # the script's own result says why it could not be read
    out = []
    for (entry, anchor, settings), words in zip(commands, arguments):
        if not run_scope.runs_entry(knowledge, entry):
            continue
        written = [(w.text, w.dynamic) for w in words]
        try:
            composed = run_config.compose(
                run_config.flags(written), package, run_config.entry_file(package, entry, knowledge),
                os.path.join(package, knowledge.run_config), [t for t, dynamic in written if not dynamic],
                os.path.dirname(os.path.abspath(path)), path)
        except run_config.ConfigError:
            continue  # a config that is not there: nothing about its keys is proven
        if composed.files:
            scanned.record_reads(composed.files)
        refusals = (command_refusals(path, package, knowledge, entry, written, settings, composed)
                    if package_identity.exact else [])
        out.append(CommandConfig(Span(anchor.start, anchor.end), composed, tuple(refusals),
                                 tuple(s.key for s in settings if s.prefix != "~")))
    return out


def _in_run_config(proof: str, knowledge) -> bool:
    first = re.search(r"verl/trainer/config/(\S+?\.yaml):", proof)
    return first is not None and (first.group(1) == os.path.basename(knowledge.run_config) or "/" in first.group(1))


def _known_refusals(text: str, verl, scanned) -> list[CommandConfig]:
    """Where the run's verl is a release pinned but not on disk: the overrides of its commands that compose the
    entry point's own config (no config flag) that its knowledge proves Hydra refuses: a key `[[absent]]` proves
    that config lacks, or a `+key=` for a `[[setting]]` key the YAML sets to a value (its default, with its line)."""
    from rlcompat.lang import shell
    from rlcompat.lang.settings import Span

    knowledge = verl_config.knowledge_of(verl)
    # a key the entry point's own config writes to a value `+` cannot add over: its proof's first YAML is the run
    # config or a config group it mounts (not another trainer's top config such as sft_trainer_engine.yaml), and no
    # other engine's config, which this composition may not mount
    set_in_yaml = {s.key: s.proof for s in knowledge.settings
                   if not s.add_prefix and not s.config and not s.engine and _in_run_config(s.proof, knowledge)
                   and s.default not in ("null", "???", "") and "${" not in s.default}
    if not knowledge.absent and not set_in_yaml:
        return []
    try:
        parsed = scanned.derived(shell.SCRIPT_KIND, text, lambda: shell.parse(text))
        commands = shell.entry_commands(parsed, scanned)
        arguments = shell.entry_arguments(parsed, scanned)
    except shell.ShellSyntaxError:
        return []
    live = {s.key for s in knowledge.settings}
    config = f"verl/{knowledge.run_config}"
    out = []
    for (entry, anchor, settings), words in zip(commands, arguments):
        given = run_config.flags([(w.text, w.dynamic) for w in words])
        if not run_scope.runs_entry(knowledge, entry) or given.unknown or given.path or given.name or given.dirs:
            continue  # another config may have the key: only the entry point's own is known
        deleted = [w.text[1:].partition("=")[0] for w in words if not w.dynamic and w.text.startswith("~")]
        adds = {id(s) for s in _first_adds(settings, deleted) if not s.value.lstrip().startswith(("[", "{"))}
        refusals = []
        for setting in settings:
            if id(setting) in adds and setting.key in set_in_yaml:
                refusals.append(Refusal(setting, entry, config, knowledge.version, proof=set_in_yaml[setting.key],
                                        held=True))
                continue
            table = next((a for a in knowledge.absent if setting.key == a or setting.key.startswith(a + ".")), None)
            if setting.prefix or table is None:
                continue
            spelled = [(k, why) for k, why in verl_config.respelled(setting.key, knowledge) if k in live]
            key, why = spelled[0] if len({k for k, _ in spelled}) == 1 else ("", "")
            refusals.append(Refusal(setting, entry, config, knowledge.version, key, why,
                                    proof=knowledge.absent[table]))
        out.append(CommandConfig(Span(anchor.start, anchor.end), None, tuple(refusals),
                                 tuple(s.key for s in settings if s.prefix != "~")))
    return out
