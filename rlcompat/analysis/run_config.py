"""The config a run composes, where its command names one (`--config-path DIR --config-name NAME`, `-cp`, `-cn`,
`--config-dir`), read as Hydra composes it: the values it sets for the keys a `[[run_option]]`'s `when` reads.

Hydra's flags (https://hydra.cc/docs/advanced/hydra-command-line-flags/): `--config-path` replaces the entry point's
config directory (absolute, or relative to the entry module's file), `--config-name` the config it composes,
`--config-dir` adds a directory to the search path; a config's `hydra.searchpath` (`file://DIR`, `pkg://MODULE`) adds
more. A config's `defaults` list composes other configs in order, `_self_` where its own values go (last when
absent), and chooses groups (`model_engine: dp`, `override model_engine: megatron`): a group is a key of its own, as
the command line's `model_engine=megatron` sets it. A config whose defaults reach the entry point's own default config
(`[default_run]` `config`: verl's ppo_trainer) gets `[default_run]`'s values for what it leaves unset; any other gets
none (every key it leaves unset is unknown). verl recommends that recipe for a user's own config:
`defaults: [ppo_trainer, _self_]` with `hydra.searchpath: [pkg://verl.trainer.config]`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import yaml

FLAGS = {"--config-path": "path", "-cp": "path", "--config-name": "name", "-cn": "name", "--config-dir": "dir",
         "-cd": "dir"}


class ConfigError(Exception):
    """A config the command names that cannot be found or read: one line naming it and what to do."""


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
    values: dict[str, str] = field(default_factory=dict)  # full key -> value as a command line writes it
    known: bool = True  # whether it composes the default config, so a key it leaves unset has `[default_run]`'s value
    files: list[str] = field(default_factory=list)  # the config files read outside the package (the user's own)


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
    last = lambda kind: found[kind][-1] if found[kind] else ""  # noqa: E731 (Hydra: the last flag wins)
    return Flags(last("path"), last("name"), tuple(found["dir"]))


def compose(given: Flags, package: str, entry_file: str, default_config: str, run_values, cwd: str,
            where: str) -> Composed:
    """The config the command composes. `entry_file`: the entry module's file (a relative --config-path is
    relative to its directory); `default_config`: the entry point's own config file (verl's ppo_trainer.yaml);
    `run_values`: `[default_run]`'s values; `where`: the script or command, for messages."""
    if given.unknown:  # a flag's value is a shell variable: which config is composed is not known here
        return Composed(given.name or "a config named by a shell variable", known=False)
    default_dir = os.path.normpath(os.path.dirname(default_config))
    default_name = os.path.splitext(os.path.basename(default_config))[0]
    name = os.path.splitext(given.name)[0] if given.name else default_name
    primary = default_dir
    if given.path:
        primary = os.path.normpath(given.path if os.path.isabs(given.path) else
                                   os.path.join(os.path.dirname(entry_file), given.path))
        if not os.path.isdir(primary):
            raise ConfigError(f"{where}: --config-path {given.path}: no such directory (Hydra reads it relative to "
                              f"{os.path.dirname(entry_file)}); pass the directory that holds {name}.yaml")
    search = [primary, *(d if os.path.isabs(d) else os.path.join(cwd, d) for d in given.dirs)]
    if not given.path and name == default_name:
        return Composed("")
    reader = _Reader(package, default_config, default_name, run_values, cwd, where)
    path = reader.find(name, search)
    if path is None:
        raise ConfigError(f"{where}: --config-name {given.name}: no {name}.yaml in {', '.join(search)}; pass "
                          "--config-path with the directory that holds it")
    values, known = reader.read(path, search)
    return Composed(given.name or name, values, known, reader.files)


class _Reader:
    def __init__(self, package, default_config, default_name, run_values, cwd, where):
        self.package, self.default_name, self.run_values = package, default_name, run_values
        self.default_config = os.path.realpath(default_config)
        self.cwd, self.where = cwd, where
        self.files: list[str] = []
        self.seen: set[str] = set()

    def find(self, name: str, search: list[str]) -> str | None:
        for directory in search:
            path = os.path.join(directory, name + ".yaml")
            if os.path.isfile(path):
                return path
        return None

    def read(self, path: str, search: list[str]) -> tuple[dict[str, str], bool]:
        """(values, whether it composes the default config) of the config at `path`."""
        real = os.path.realpath(path)
        if real == self.default_config:
            return {}, True  # verl's own default config: `[default_run]`'s values stand for it
        if real in self.seen:
            return {}, False
        self.seen.add(real)
        if not real.startswith(os.path.realpath(self.package) + os.sep):
            self.files.append(path)
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: not a YAML config rlcompat can read ({str(exc).splitlines()[0]}); fix it "
                              f"or name another with --config-name ({self.where})")
        if not isinstance(doc, dict):
            raise ConfigError(f"{path}: a Hydra config is a mapping of keys, and this file is not one ({self.where})")
        search = search + self._searchpath(doc)
        own = _flat({k: v for k, v in doc.items() if k not in ("defaults", "hydra")})
        values: dict[str, str] = {}
        known, placed = False, False
        for entry in doc.get("defaults") or ():
            if entry == "_self_":
                values.update(own)
                placed = True
            elif isinstance(entry, str):
                sub = self.find(entry, search)
                if sub is None and entry == self.default_name:
                    sub_values, sub_known = {}, True  # verl's own, by the name Hydra finds it under
                elif sub is None:
                    raise ConfigError(f"{path}: its defaults name {entry}, and no {entry}.yaml is on its search "
                                      f"path ({', '.join(search)}); add the directory with --config-dir "
                                      f"({self.where})")
                else:
                    sub_values, sub_known = self.read(sub, search)
                values.update(sub_values)
                if sub_known:  # the default config's values win over what came before it
                    values = {k: v for k, v in values.items() if k not in self.run_values}
                known = known or sub_known
            elif isinstance(entry, dict):
                for group, choice in entry.items():
                    group = str(group).removeprefix("override ").strip()
                    if "@" not in group and "/" not in group and choice is not None:
                        values[group] = _text(choice)
        if not placed:
            values.update(own)
        return values, known

    def _searchpath(self, doc: dict) -> list[str]:
        hydra = doc.get("hydra") if isinstance(doc.get("hydra"), dict) else {}
        out = []
        for entry in hydra.get("searchpath") or ():
            entry = str(entry)
            if entry.startswith("pkg://"):
                parts = entry[len("pkg://"):].strip("/").replace("/", ".").split(".")
                top = os.path.basename(os.path.realpath(self.package))
                if parts and parts[0] == top:
                    out.append(os.path.join(self.package, *parts[1:]))
            elif entry.startswith("file://"):
                d = entry[len("file://"):]
                out.append(d if os.path.isabs(d) else os.path.join(self.cwd, d))
        return out


def _flat(mapping: dict, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in mapping.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            out[full] = "{}"
            out.update(_flat(value, full + "."))
        else:
            out[full] = _text(value)
    return out


def _text(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return str(value)


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
