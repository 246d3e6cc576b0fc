"""Which run a finding belongs to: the framework's default run, or a run that selects an option.

A file of a verl package whose version is found in the tree itself is reached only by a run that selects an option
when its version's knowledge lists it under `[[run_option]]` (rlcompat/knowledge/data/verl/<version>.toml: the Megatron engine's
configs and code, the fused Triton kernels, ...). Every other file, and every file outside a verl package (a user's
launch script or config says itself what its run selects), belongs to every run. `rlcompat matrix` judges one run
(`--run`, default `default`); findings of other runs are counted and named, and do not decide its verdict.
"""

from __future__ import annotations

import os

from rlcompat.knowledge import verl_config
from rlcompat.knowledge.verl_config import RunOption

DEFAULT = "default"  # the run a launch without options gets (`[default_run]`)
ALL = "all"  # every finding counts, whatever run reaches it


def run_names() -> tuple[str, ...]:
    """What `--run` takes: default, all, and every option a rule set names."""
    names = {r.name for v in verl_config.available_versions() for r in verl_config.load_version(v).run_options}
    return (DEFAULT, ALL, *sorted(names))


def option_of(path: str) -> RunOption | None:
    """The run option that alone reaches `path`, or None when any run may (or the file's verl is not exactly a known
    release: then nothing supports leaving it out). verl_config caches the package root and release per directory."""
    full = os.path.abspath(path)
    found = _package_rules(full)
    if found is None:
        return None
    root, knowledge = found
    relative = os.path.relpath(full, root).replace(os.sep, "/")
    return next((r for r in knowledge.run_options if r.covers(relative)), None)


def package_knowledge(paths) -> verl_config.Knowledge | None:
    """The knowledge of the first verl package of exactly a known release among `paths` (files), or None."""
    for path in paths:
        found = _package_rules(os.path.abspath(path))
        if found is not None:
            return found[1]
    return None


def _package_rules(full: str) -> tuple[str, verl_config.Knowledge] | None:
    """The verl package holding the file `full` and its release's rule set, where it is exactly a known release."""
    root = verl_config.package_root(os.path.dirname(full))
    if root is None:
        return None
    version, exact, _ = verl_config.package_release(root)
    return (root, verl_config.load_version(version)) if exact else None


def in_run(path: str, run: str) -> tuple[bool, RunOption | None]:
    """Whether a finding at `path` is in `run`, and the option that reaches its file (None: every run does)."""
    option = option_of(path)
    if run == ALL or option is None:
        return True, option
    return option.name == run, option


def runs_entry(knowledge: verl_config.Knowledge, entry: str) -> bool:
    """Whether a command running `entry` (a module, or a script's path) is a run `[default_run]` describes."""
    return any(entry == m or entry.endswith(m.replace(".", "/") + ".py") for m in knowledge.run_entry)


def selection(option: RunOption, knowledge: verl_config.Knowledge, overrides: dict[str, str | None],
              defaults: dict[str, str | None] | None = None) -> str | None:
    """How a launch whose overrides are `overrides` (full Hydra key -> value; None where the script's value cannot
    be known) selects `option`, in words ("algorithm.adv_estimator=gae (default), model_engine=dp (default)"), or None
    when it does not, or when a key its `when` reads has a value nobody can know here: no claim is made then.
    `defaults`: what the run gets for a key the launch leaves unset, where the tree's own config says (a fork's);
    else `[default_run]`'s values."""
    for table in option.when:
        said = []
        for key, accepted in table:
            given = key in overrides
            value = overrides[key] if given else (defaults or {}).get(key, knowledge.run_values.get(key))
            if value is None or not accepts(value, accepted):
                break
            said.append(f"{key}={value}" + ("" if given else " (default)"))
        else:
            return ", ".join(said)
    return None


def selects(when, knowledge: verl_config.Knowledge, overrides: dict[str, str | None],
            defaults: dict[str, str | None] | None = None, unconditional: bool = False,
            known_defaults: bool = True) -> bool | None:
    """Whether a launch with `overrides` selects a row whose `when` is `when` (as `selection` reads it): True, False,
    or None where a key it reads has a value nobody can know here (a shell variable, a key without a known
    default). An accepted value "!V" accepts anything but V; "has:V" accepts a list that holds V. A key the launch
    sets below (`K.sub=...`) is a mapping, not null. An empty `when`: `unconditional` (a `[[run_module]]` every run
    imports), else no launch selects it (a `[[run_option]]` whose selecting key is not known). `defaults`: the
    values the run gets where the launch sets nothing (a fork's config, the config the command composes);
    `known_defaults` False: that config does not compose `[default_run]`'s, so a key neither sets has no value known
    here."""
    if not when:
        return unconditional
    answer: bool | None = False
    for table in when:
        matched: bool | None = True
        for key, accepted in table:
            value = _value(key, knowledge, overrides, defaults, known_defaults)
            if value is None:
                matched = None
                continue
            if not accepts(value, accepted):
                matched = False
                break
        if matched:
            return True
        if matched is None:
            answer = None
    return answer


def _value(key: str, knowledge, overrides, defaults, known_defaults: bool = True) -> str | None:
    if key in overrides:
        return overrides[key]
    if any(o.startswith(key + ".") for o in overrides):
        return "{}"
    if key in (defaults or {}):
        return defaults[key]
    return knowledge.run_values.get(key) if known_defaults else None


MEMBER = "has:"  # `when` value for a list key: the list holds what follows ("has:hf_model")


def accepts(value: str, accepted) -> bool:
    """Whether a key's value (as written: `fp32`, `null`, `'[model,hf_model]'`) is one `accepted` selects: a value
    listed, anything but a "!V", or a list holding a "has:V"."""
    value = _unquoted(value).lower()
    yes = {a.lower() for a in accepted if not a.startswith(("!", MEMBER))}
    no = {a[1:].lower() for a in accepted if a.startswith("!")}
    held = {a[len(MEMBER):].lower() for a in accepted if a.startswith(MEMBER)}
    return value in yes or bool(no and value not in no) or bool(held & set(list_items(value)))


def list_items(value: str) -> list[str]:
    """The items of a list value as Hydra and YAML write it (`[model, 'hf_model']`); a scalar is a list of itself,
    null an empty one."""
    value = _unquoted(value)
    if value.lower() in ("null", "none", "~", ""):
        return []
    if value.startswith("[") and value.endswith("]"):
        return [_unquoted(v).lower() for v in value[1:-1].split(",") if _unquoted(v)]
    return [value.lower()]


def _unquoted(value: str) -> str:
    return value.strip().strip("'\"").strip()
