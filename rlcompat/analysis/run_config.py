"""The config a run composes, where its command names one (`--config-path DIR --config-name NAME`, `-cp`, `-cn`,
`--config-dir`), composed as Hydra composes it (rlcompat/schema/hydra_static.py: the defaults list, `_self_`, group
choices, `hydra.searchpath`): the values the run gets for the keys a `[[run_option]]`'s `when` reads.

Hydra's flags (https://hydra.cc/docs/advanced/hydra-command-line-flags/): `--config-path` replaces the entry point's
config directory (absolute, or relative to the entry module's file), `--config-name` the config it composes,
`--config-dir` adds a directory to the search path. A config whose composition reads the entry point's own default
config (`[default_run]` `config`: verl's ppo_trainer, which verl recommends a config of one's own compose:
`defaults: [ppo_trainer, _self_]` with `hydra.searchpath: [pkg://verl.trainer.config]`) gets `[default_run]`'s
values for a key no file sets (a dataclass default, with its proof there); any other gets none: a key it leaves
unset is unknown.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlcompat.schema import KeySchema

FLAGS = {"--config-path": "path", "-cp": "path", "--config-name": "name", "-cn": "name", "--config-dir": "dir",
         "-cd": "dir"}


class ConfigError(Exception):
    """A config the command names that is not there: one line naming it and what to do."""


@dataclass(frozen=True)
class Flags:
    """Hydra's config flags of one command; None where a value is a shell expansion nobody can know here."""

    path: str | None = ""
    name: str | None = ""
    dirs: tuple[str | None, ...] = ()

    @property
    def unknown(self) -> bool:
        return self.path is None or self.name is None or None in self.dirs


@dataclass
class Composed:
    """What the named config gives the run."""

    name: str  # as the command names it; "" for the entry point's own default config
    values: dict[str, str | None] = field(default_factory=dict)  # full key -> value as a command line writes it
    known: bool = True  # whether it composes the default config, so a key no file sets has `[default_run]`'s value
    files: list[str] = field(default_factory=list)  # the config files read outside the package (the user's own)
    unread: str = ""  # why the composition could not be followed, where it could not
    source: tuple[str, str] = ("", "")  # (directory, name) of the config composed; ("", "") where not known
    set_by: dict[str, str] = field(default_factory=dict)  # leaf key -> the user's file that sets it (not the package's)


def _words(words: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """The words as the command passes them: a line continuation inside one is no character of it, and a word of
    whitespace alone (`\\ ` at a line's end) none."""
    out = [(text.replace("\\\n", "").strip(), dynamic) for text, dynamic in words]
    return [(text, dynamic) for text, dynamic in out if text]


def flags(words: list[tuple[str, bool]]) -> Flags:
    """Hydra's config flags among a command's words ((text, dynamic) after the entry point)."""
    words = _words(words)
    found: dict[str, list[str | None]] = {"path": [], "name": [], "dir": []}
    i = 0
    while i < len(words):
        text, dynamic = words[i]
        name, eq, inline = text.partition("=")
        kind = FLAGS.get(name)
        if kind is not None:
            if eq:
                value: str | None = None if dynamic else inline
            elif i + 1 < len(words):
                i += 1
                value = None if words[i][1] else words[i][0]
            else:
                value = ""
            found[kind].append(value)
        i += 1
    path, name = (found[k][-1] if found[k] else "" for k in ("path", "name"))  # Hydra: the last flag wins
    return Flags(path, name, tuple(found["dir"]))


def runs_module(entry: str, module: str) -> bool:
    """Whether a command's entry (`verl.trainer.main_ppo`, or a script's path) runs `module`."""
    return entry == module or entry.endswith(module.replace(".", "/") + ".py")


def entry_file(package: str, entry: str, knowledge) -> str:
    """The file of the module a command runs (`-m verl.trainer.main_ppo`, or a script's path): Hydra reads a
    relative --config-path from its directory."""
    module = next((m for m in knowledge.run_entry if runs_module(entry, m)), entry)
    parts = module.split(".")
    return os.path.join(os.path.dirname(os.path.realpath(package)), *parts[:-1], parts[-1] + ".py")


def compose(given: Flags, package: str, entry_file: str, default_config: str, group_words: list[str], cwd: str,
            where: str) -> Composed:
    """The config the command composes. `entry_file`: the entry module's file (a relative --config-path is
    relative to its directory); `default_config`: the entry point's own config file (verl's ppo_trainer.yaml);
    `group_words`: the command's overrides (`model_engine=megatron` chooses a group); `cwd`: where the command runs
    (a relative --config-dir or `file://` search path); `where`: the script or command, for messages."""
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.hydra_static import compose_read, resolved

    if given.unknown:  # a flag's value is a shell variable: which config is composed is not known here
        return Composed(given.name or "a config named by a shell variable", known=False)
    default_dir = os.path.normpath(os.path.dirname(default_config))
    default_name = os.path.splitext(os.path.basename(default_config))[0]
    name = os.path.splitext(given.name)[0] if given.name else default_name
    if not given.path and name == default_name:
        return Composed("", source=(default_dir, default_name))
    primary = default_dir
    if given.path:
        primary = os.path.normpath(given.path if os.path.isabs(given.path) else
                                   os.path.join(os.path.dirname(entry_file), given.path))
        if not os.path.isdir(primary):
            raise ConfigError(f"{where}: --config-path {given.path}: no such directory (Hydra reads it relative to "
                              f"{os.path.dirname(entry_file)}); pass the directory that holds {name}.yaml")
    dirs = tuple(d if os.path.isabs(d) else os.path.join(cwd, d) for d in given.dirs)
    if not any(os.path.isfile(os.path.join(d, name + ".yaml")) for d in (primary, *dirs)):
        raise ConfigError(f"{where}: --config-name {given.name}: no {name}.yaml in {', '.join((primary, *dirs))}; "
                          "pass --config-path with the directory that holds it")
    try:
        values, files, origins = compose_read(primary, name, group_words,
                                              (cwd, os.path.dirname(os.path.realpath(package))), dirs)
    except SchemaUnread as exc:  # a construct the static composition cannot follow: no value is claimed
        return Composed(given.name or name, known=False, unread=str(exc))
    inside = os.path.realpath(package) + os.sep
    own = {f for f in files if not os.path.realpath(f).startswith(inside)}
    return Composed(given.name or name, resolved(values),
                    known=any(os.path.realpath(f) == os.path.realpath(default_config) for f in files),
                    files=[f for f in files if f in own], source=(primary, name),
                    set_by={k: f for k, f in origins.items() if f in own})


def absent(composed: Composed, keys: list[str], group_words: list[str],
           bases: tuple[str, ...]) -> list[tuple[str, KeySchema]]:
    """Each of `keys` (overrides written without `+`/`++`) that the composed config does not have, with the schema
    that says so: Hydra refuses such an override before anything runs (`Could not override 'K'. To append to your
    config use +K=...`, https://hydra.cc/docs/advanced/override_grammar/basic/), under a mapping written `{}` too
    (Hydra's struct mode covers the whole config). A key without a dot may choose a config group, which the key set
    does not list, and a key with `@` names a package: not judged; nor is anything where the composition is not
    known or not complete."""
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.hydra_static import compose as compose_keys

    directory, name = composed.source
    if not directory or composed.unread:
        return []
    try:
        schema = compose_keys(directory, name, group_words, bases=bases)
    except SchemaUnread:
        return []
    if not schema.complete:
        return []
    return [(k, schema) for k in dict.fromkeys(keys) if "." in k and "@" not in k and not schema.has(k)]


def held(composed: Composed, adds: list[tuple[str, str]], group_words: list[str],
         bases: tuple[str, ...]) -> dict[str, bool]:
    """Each `+key=value` of `adds` (key, value as written) that Hydra refuses because the composed config already
    holds something at the key: hydra-core 1.3.8 `config_loader_impl.py:370-385` adds only where the key's value is
    None (absent, null, `???`) or the value added is a list or mapping (merged), else raises `Could not append to
    config. An item is already at 'K'`. A key whose value is an interpolation this reading cannot follow, one with
    `@` or without a dot, and anything where the composition is not complete are not judged. Each key refused ->
    whether what the config holds there is a mapping (False: a value)."""
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.hydra_static import compose as compose_keys, compose_read, resolved

    directory, name = composed.source
    adds = [(k, v) for k, v in adds if "." in k and "@" not in k and not v.lstrip().startswith(("[", "{"))]
    if not directory or composed.unread or not adds:
        return {}
    try:
        schema = compose_keys(directory, name, group_words, bases=bases)
        values = resolved(compose_read(directory, name, group_words, bases)[0]) if schema.complete else {}
    except SchemaUnread:
        return {}
    if not schema.complete:
        return {}
    out: dict[str, bool] = {}
    for key, _ in adds:
        if not schema.has(key):
            continue
        if key in values:
            value = values[key]
            if value is None or value in ("null", "???") or "${" in value:
                continue  # None to Hydra (so `+` adds), or a value only the run resolves
        out[key] = key not in values  # a value that is set, or a mapping
    return out


HYDRA_WORD = re.compile(r"^(?:(?:\+\+|\+)?[A-Za-z_][\w\-]*(?:[./@][\w\-]+)*=.*|~[A-Za-z_][\w\-]*(?:[./@][\w\-]+)*"
                        r"(?:=.*)?)$", re.DOTALL)


def malformed(words: list[tuple[str, bool]]) -> str | None:
    """The first word after the entry point that is neither a flag nor a Hydra override (`key=value`, `+key=value`,
    `++key=value`, `~key`), or None. A word with a shell expansion is not judged (its value is not known here)."""
    words = _words(words)
    i = 0
    while i < len(words):
        text, dynamic = words[i]
        if dynamic or text.startswith("-") or HYDRA_WORD.match(text):
            if text in FLAGS:
                i += 1  # its value is the next word
            i += 1
            continue
        return text
    return None
