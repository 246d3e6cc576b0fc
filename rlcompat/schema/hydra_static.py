"""A Hydra config directory composed statically: the set of keys `hydra.compose` would build, read from the YAML
files with PyYAML, without importing Hydra or running the tree.

What is followed (Hydra's defaults list, https://hydra.cc/docs/advanced/defaults_list/): `_self_`; config-group
entries `group: option`, `group@package: option`, `override group: option`, `optional group: option`, option lists
and `null`; options written as interpolations of other groups' choices (`${model_engine}_actor`); config entries
(`- actor`: another file of the same group, merged at the same package); group paths relative to the including file's
group (`../engine@fsdp_config: fsdp`) or absolute (`/engine`); `# @package` headers; group choices given on the
command line (`model_engine=megatron`). Values are not resolved: a key's presence is what a fix needs. Anything that
cannot be followed (a missing file, YAML that does not parse, an option computed from something other than a group
choice) raises `SchemaUnread`: then nothing about the keys is proven.
"""

from __future__ import annotations

import os
import posixpath
import re
from functools import lru_cache
from typing import Iterable

from rlcompat.schema import KeySchema, SchemaUnread

_HEADER = re.compile(r"^\s*#\s*@package\s+(\S+)")
_CHOICE = re.compile(r"\$\{([^}]+)\}")
_MAX_DEPTH = 40


def compose(config_dir: str, config_name: str, overrides: Iterable[str] = (), shown: str = "",
            bases: tuple[str, ...] = ()) -> KeySchema:
    """The keys of `config_name` in `config_dir` composed with the group choices among `overrides` (Hydra
    override words, `group=option`). `shown` is how the report names the directory. `bases`: the folders a primary
    config's `hydra.searchpath` is found from (`pkg://verl.trainer.config` -> <base>/verl/trainer/config,
    `file://verl/trainer/config` -> <base>/verl/trainer/config): the tree's root, where a launch runs from."""
    choices = tuple(sorted(_group_choices(overrides).items()))
    return _compose(os.path.abspath(config_dir), config_name.removesuffix(".yaml"), choices, shown or config_dir,
                    tuple(os.path.abspath(b) for b in bases))


def compose_values(config_dir: str, config_name: str, overrides: Iterable[str] = (),
                   bases: tuple[str, ...] = ()) -> dict[str, str | None]:
    """What the composed config sets: each leaf key -> its value as text (`True`, `0.5`, `vllm`; "null" for YAML
    null, `[model,optimizer]` for a list of scalars, None for any other list), later files replacing earlier ones as
    Hydra merges them. Interpolations are left as written (`${actor_rollout_ref.actor.ppo_mini_batch_size}`).
    Raises `SchemaUnread` as `compose`."""
    return compose_read(config_dir, config_name, overrides, bases)[0]


def resolved(values: dict[str, str | None]) -> dict[str, str | None]:
    """Composed values as a run reads them: `${other.key}` as that key's value in the same config, an empty value as
    YAML null ("null")."""
    out: dict[str, str | None] = {}
    for key, value in values.items():
        if value is not None and value.startswith("${") and value.endswith("}"):
            value = values.get(value[2:-1])
        out[key] = "null" if value == "" else value
    return out


def compose_read(config_dir: str, config_name: str, overrides: Iterable[str] = (), bases: tuple[str, ...] = (),
                 dirs: tuple[str, ...] = ()) -> tuple[dict[str, str | None], list[str], dict[str, str]]:
    """`compose_values`, the files read for it in order, and the file whose content set each leaf key last (its
    value in force). `dirs`: more folders on the search path after the primary's (Hydra's `--config-dir`)."""
    choices = dict(_group_choices(overrides))
    composer = _Composer(os.path.abspath(config_dir), choices, config_dir, tuple(os.path.abspath(b) for b in bases))
    composer.dirs += [os.path.abspath(d) for d in dirs if os.path.abspath(d) not in composer.dirs]
    name = config_name.removesuffix(".yaml")
    composer.visit(name, posixpath.dirname(name), "", explicit=None, depth=0)
    return dict(composer.values), composer.files, dict(composer.origins)


def mounted_at(config_dir: str, config_name: str, bases: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """Each file the composition of `config_name` reads (absolute) -> the packages its content is merged at, in the
    order the defaults lists reach them (`actor@actor_rollout_ref.actor: dp_actor` mounts actor/dp_actor.yaml, and
    the `- actor` of its own defaults list actor/actor.yaml, at `actor_rollout_ref.actor`; the primary at "").
    Raises `SchemaUnread` as `compose`."""
    composer = _Composer(os.path.abspath(config_dir), {}, config_dir, tuple(os.path.abspath(b) for b in bases))
    name = config_name.removesuffix(".yaml")
    composer.visit(name, posixpath.dirname(name), "", explicit=None, depth=0)
    return {file: tuple(packages) for file, packages in composer.packages.items()}


def _text(value) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):  # a list of scalars as a command line writes it; else no one value
        if all(isinstance(v, (str, int, float, bool)) for v in value):
            return "[" + ",".join(str(v) for v in value) + "]"
        return None
    return str(value)


def search_dirs(config_dir: str, config_name: str, bases: tuple[str, ...]) -> list[str]:
    """The folders a primary config's `hydra.searchpath` names, found from `bases` (as `compose` finds them); the
    load check hands them to Hydra as `file://` paths, so a `pkg://` entry never imports the package."""
    composer = _Composer(os.path.abspath(config_dir), {}, config_dir, tuple(os.path.abspath(b) for b in bases))
    data, _ = composer._load(config_name.removesuffix(".yaml"))
    composer._search_path(data.get("hydra"))
    return composer.dirs[1:]


def _group_choices(overrides: Iterable[str]) -> dict[str, str]:
    """`group=option` words: a key without dots (`model_engine`, `actor`) or with slashes (`actor/optim`) may be a
    group; whether it is, the defaults list decides."""
    out = {}
    for word in overrides:
        key, eq, value = word.partition("=")
        key = key.lstrip("+~")
        if eq and "." not in key and key and "@" not in key:
            out[key] = value
    return out


@lru_cache(maxsize=64)
def _compose(config_dir: str, config_name: str, choices: tuple[tuple[str, str], ...], shown: str,
             bases: tuple[str, ...]) -> KeySchema:
    composer = _Composer(config_dir, dict(choices), shown, bases)
    group = posixpath.dirname(config_name)
    composer.visit(config_name, group, "", explicit=None, depth=0)
    return KeySchema("hydra", f"{shown.rstrip('/')}/{config_name}.yaml", frozenset(composer.keys),
                     frozenset(composer.open_maps))


class _Composer:
    def __init__(self, root: str, cli_choices: dict[str, str], shown: str, bases: tuple[str, ...] = ()) -> None:
        self.root = root
        self.dirs = [root]  # the primary's folder, then its hydra.searchpath
        self.bases = bases
        self.cli = cli_choices
        self.shown = shown.rstrip("/")
        self.choices: dict[str, str] = {}
        self.keys: set[str] = set()
        self.open_maps: set[str] = set()
        self.maps: set[str] = set()  # keys whose value is a mapping
        self.values: dict[str, str | None] = {}  # leaf key -> its value as text (compose_values)
        self.files: list[str] = []  # the files read, in order (compose_read)
        self.origins: dict[str, str] = {}  # leaf key -> the file whose content set it last (compose_read)
        self.packages: dict[str, list[str]] = {}  # file -> the packages its content is merged at (mounted_at)

    def _load(self, name: str) -> tuple[dict, str | None]:
        where = f"{self.shown}/{name}.yaml"
        for folder in self.dirs:
            path = os.path.join(folder, *name.split("/")) + ".yaml"
            try:
                stat = os.stat(path)
            except OSError:
                continue
            try:
                data, header = _parsed(path, stat.st_mtime_ns, stat.st_size)
            except OSError:
                continue
            except _Unreadable as exc:
                raise SchemaUnread(f"{where}: {exc}") from None
            self.files.append(path)
            return dict(data), header  # a copy: `visit` takes its `defaults` out
        raise SchemaUnread(f"{where}: no such file (named by a defaults list)")

    def visit(self, name: str, group: str, default_package: str, explicit: str | None, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise SchemaUnread(f"{self.shown}/{name}.yaml: defaults nest deeper than {_MAX_DEPTH} (a cycle?)")
        data, header = self._load(name)
        file = self.files[-1]
        if explicit is not None:
            package = explicit
        elif header is not None:
            package = _header_package(header, group, default_package)
        else:
            package = default_package
        defaults = data.pop("defaults", None) or []
        if depth == 0:
            self._search_path(data.get("hydra"))
        if not isinstance(defaults, list):
            raise SchemaUnread(f"{self.shown}/{name}.yaml: `defaults` is not a list")
        self._add_package(package)
        self.packages.setdefault(file, [])
        if package not in self.packages[file]:
            self.packages[file].append(package)
        overrides = [e for e in defaults if isinstance(e, dict) and len(e) == 1
                     and str(next(iter(e))).startswith("override ")]
        for entry in overrides:
            key, option = next(iter(entry.items()))
            spec = key.split(None, 1)[1]
            self.choices.setdefault(_absolute(group, spec.split("@")[0]), option)
        for entry in defaults:  # choices are known to interpolations wherever they stand in the list
            if isinstance(entry, dict) and len(entry) == 1:
                key, option = next(iter(entry.items()))
                written = str(key).split()[-1].partition("@")[0]
                if isinstance(option, str) and "${" not in option:
                    self.choices.setdefault(_absolute(group, written), option)
        if "_self_" not in defaults:
            defaults = defaults + ["_self_"]  # Hydra 1.1+: a config's own content goes last unless placed
        for entry in defaults:
            if entry == "_self_":
                self._content(data, package, file)  # merged in defaults order: a later value replaces an earlier one
                continue
            if entry in overrides:
                continue
            if isinstance(entry, str):
                spec, _, pkg = entry.partition("@")
                path = _absolute(group, spec)
                self.visit(path, posixpath.dirname(path), package,
                           _relative_package(pkg, package, path) if pkg else package, depth + 1)
            elif isinstance(entry, dict) and len(entry) == 1:
                self._group_entry(entry, group, package, depth)
            else:
                raise SchemaUnread(f"{self.shown}/{name}.yaml: a defaults entry rlcompat cannot read: {entry!r}")

    def _search_path(self, hydra) -> None:
        paths = hydra.get("searchpath") if isinstance(hydra, dict) else None
        for entry in paths if isinstance(paths, list) else []:
            scheme, _, rest = str(entry).partition("://")
            relative = rest.replace(".", "/") if scheme == "pkg" else rest if scheme == "file" else None
            if relative is None or "$" in relative:
                continue
            for base in ((relative,) if os.path.isabs(relative) else tuple(os.path.join(b, relative) for b in self.bases)):
                if os.path.isdir(base) and base not in self.dirs:
                    self.dirs.append(base)
                    break

    def _group_entry(self, entry: dict, group: str, package: str, depth: int) -> None:
        key, option = next(iter(entry.items()))
        words = str(key).split()
        optional = words[0] == "optional"
        spec = words[-1]
        written, _, pkg = spec.partition("@")
        absolute = _absolute(group, written)
        if absolute == "hydra" or absolute.startswith("hydra/"):
            return  # Hydra's own groups (logging, launcher): no keys of the training config
        option = self.cli.get(absolute, self.choices.get(absolute, option))
        if option is None or option == "null":
            return
        options = option if isinstance(option, list) else [option]
        self.choices[absolute] = options[-1] if options else None
        relative = written.lstrip("/").split("/")
        relative = [p for p in relative if p not in ("..", ".")]
        child_default = ".".join(p for p in [package] + relative if p)
        for one in options:
            one = self._interpolated(str(one), absolute)
            path = f"{absolute}/{one}"
            if optional and not any(os.path.isfile(os.path.join(d, *path.split("/")) + ".yaml") for d in self.dirs):
                continue
            explicit = _relative_package(pkg, package, absolute) if pkg else None
            self.visit(path, absolute, child_default, explicit, depth + 1)

    def _interpolated(self, option: str, group: str) -> str:
        def choice(m: re.Match) -> str:
            name = m.group(1).strip()
            found = self.cli.get(name, self.choices.get(name))
            if found is None:
                raise SchemaUnread(f"{self.shown}: the option of group {group} is `{option}`, and no group {name} "
                                   "was chosen before it")
            return str(found)

        return _CHOICE.sub(choice, option)

    def _add_package(self, package: str) -> None:
        parts = package.split(".") if package else []
        for i in range(1, len(parts) + 1):
            self.keys.add(".".join(parts[:i]))

    def _content(self, data: dict, prefix: str, file: str) -> None:
        for key, value in data.items():
            full = f"{prefix}.{key}" if prefix else str(key)
            self.keys.add(full)
            if not isinstance(value, dict) and full in self.maps:
                below = full + "."
                self.keys = {k for k in self.keys if not k.startswith(below)}  # a value replaces a mapping
                self.open_maps = {k for k in self.open_maps if k != full and not k.startswith(below)}
                self.maps = {k for k in self.maps if k != full and not k.startswith(below)}
                self.values = {k: v for k, v in self.values.items() if not k.startswith(below)}
                self.origins = {k: v for k, v in self.origins.items() if not k.startswith(below)}
            if not isinstance(value, dict):
                self.values[full] = _text(value)
                self.origins[full] = file
            if isinstance(value, dict):
                self.values.pop(full, None)  # a mapping replaces a value
                self.origins.pop(full, None)
                self.maps.add(full)
                if not value:
                    self.open_maps.add(full)
                self._content(value, full, file)


def _absolute(group: str, written: str) -> str:
    """A group or config path as written in a file of `group`, made relative to the config directory."""
    if written.startswith("/"):
        return posixpath.normpath(written.lstrip("/"))
    joined = posixpath.normpath(posixpath.join(group, written)) if group else posixpath.normpath(written)
    if joined.startswith(".."):
        raise SchemaUnread(f"the defaults path {written} leaves the config directory")
    return joined


def _relative_package(pkg: str, parent: str, group: str) -> str:
    if pkg == "_global_":
        return ""
    if pkg.startswith("_global_."):
        return pkg[len("_global_."):]
    if pkg == "_here_":
        return parent
    if pkg == "_group_":
        pkg = group.replace("/", ".")
    return f"{parent}.{pkg}" if parent else pkg


def _header_package(header: str, group: str, default: str) -> str:
    if header == "_global_":
        return ""
    if header.startswith("_global_."):
        return header[len("_global_."):]
    if header == "_group_":
        return group.replace("/", ".")
    if header == "_here_":
        return default
    return header


class _Unreadable(Exception):
    """A config file that is not a YAML mapping: why, for SchemaUnread."""


@lru_cache(maxsize=512)
def _parsed(path: str, mtime_ns: int, size: int) -> tuple[dict, str | None]:
    """A config file's mapping and its `# @package` header, parsed once per version of the file (its mtime and size
    are the key): a scan composes verl's config for every launch script, and PyYAML is most of that time. Callers
    copy the top level before changing it; nothing below it is changed."""
    import yaml

    with open(path, encoding="utf-8-sig") as fh:
        text = fh.read()
    header = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.lstrip().startswith("#"):
            break
        m = _HEADER.match(line)
        if m:
            header = m.group(1)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _Unreadable(f"not readable YAML ({first})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _Unreadable("not a mapping")
    return data, header
