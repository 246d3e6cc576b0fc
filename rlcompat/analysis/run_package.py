"""The verl package a launch script's run imports, and what it offers the run: where it is (the tree's own, else the
installed distribution: `package_run`), what its own primary config and entry points compose and build (`fork_values`,
`fork_entry_configs`, `entry_uses`, `fork_choice`), where a `[[run_option]]` or `[[handle]]` row's code is in it
(`code_region`, `function_lines`), and how messages name its files and their fixes (`shown`, `remedy`). Read as text and
with `ast`; nothing of the package is imported or run (the installed one is located by its import spec).

Used by rlcompat/analysis/launch_path.py (what a command's run reaches) and rlcompat/analysis/config_handles.py (what
a package's own config stands for).
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache

from rlcompat.knowledge import identity, verl_config
from rlcompat.findings import Finding
from rlcompat.pipeline.source import text_of


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


def fork_choice(package: str, knowledge, option, overrides, defaults, entry_file: str | None = None):
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


def entry_uses(package: str, knowledge, dotted: str, values: dict[str, str | None],
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


def package_of(path: str) -> str | None:
    from rlcompat.knowledge.verl_config import package_root

    return package_root(os.path.dirname(os.path.abspath(path)))


def code_there(package, knowledge, scanned) -> list:
    """The rows whose `code` the package has (a function of that name in that file) and this scan does not check."""
    return [option for option in knowledge.run_options
            if any((found := code_region(package, code)) is not None and os.path.abspath(found[0]) not in scanned
                   for code in option.code)]


def code_region(package: str, code: str) -> tuple[str, str, tuple[int, int]] | None:
    """(file, function, its lines) of a row's "file:function", or None where the package has no such function."""
    relative, _, function = code.partition(":")
    file = os.path.join(package, relative)
    lines = function_lines(file, function) if function else ((1, 10**9) if os.path.isfile(file) else None)
    return None if lines is None else (file, function, lines)


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


def yaml_keys_by_line(path: str) -> dict[int, str]:
    return {e.key_mark[0] + 1: e.key for doc in _yaml_docs(path) for e in doc.entries}


def yaml_tables_by_key(path: str) -> dict[str, int]:
    """Every key of a YAML file, mappings included, -> the line it is written on."""
    out: dict[str, int] = {}
    for doc in _yaml_docs(path):
        out.update((key, section.key_mark[0] + 1) for key, section in doc.sections.items())
        out.update((e.key, e.key_mark[0] + 1) for e in doc.entries)
    return out


@lru_cache(maxsize=1)
def _entry_words() -> tuple[str, ...]:
    """The first word of every entry-module prefix verl's knowledge lists ("verl", "recipe"): a command that runs
    none of them runs nothing of verl (a recipe's launch script may never name verl itself)."""
    words = {p.split(".", 1)[0] for v in verl_config.available_versions()
             for p in verl_config.load_version(v).entry_prefixes}
    return tuple(sorted(w for w in words if w))


def may_launch(text: str) -> bool:
    return any(w in text for w in _entry_words())


def remedy(f: Finding, file: str, checker) -> str:
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


def shown(path: str) -> str:
    """A framework file as messages name it: relative to the working directory when inside it, else absolute."""
    full = os.path.abspath(path)
    relative = os.path.relpath(full, os.getcwd())
    return full if relative.startswith("..") else relative.replace(os.sep, "/")
