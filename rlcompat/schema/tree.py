"""Which schema a launch command of a tree reads, found from the command and the tree's own entry point.

A command `python -m verl.trainer.main_ppo k=v ...` (or `python path/to/main.py ...`) runs a module; where its file is
in the tree, its `ast` says how the config is built: `@hydra.main(config_path=..., config_name=...)` composes a
Hydra config directory (the command's `--config-path`/`--config-name` win), `OmegaConf.structured(Cls())` merges
into a structured config (absent fields cannot be added), `OmegaConf.from_cli()` reads `key=value` words without
Hydra's `+`/`++`, and `parser.add_argument("--flag")` declares argparse options. A verl package trimmed of its entry
point (the tree ships verl/trainer/config but not main_ppo.py) is read as verl's main_ppo reads it:
`config_path="config", config_name="ppo_trainer"` (verl/trainer/main_ppo.py of every release).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import lru_cache

from rlcompat.schema import KeySchema, SchemaUnread

_CONFIG_PATH = ("--config-path", "-cp")
_CONFIG_NAME = ("--config-name", "-cn")
_CONFIG_DIR = ("--config-dir", "-cd")
# verl's PPO entry point, as every release writes it (verl/trainer/main_ppo.py: `@hydra.main(config_path="config",
# config_name="ppo_trainer", version_base=None)`): used where a trimmed tree ships the config but not the module.
VERL_PPO = ("verl.trainer.main_ppo", "config", "ppo_trainer")


@dataclass(frozen=True)
class Launch:
    """What a command says about its entry point and config."""

    module: str = ""  # `-m` module
    script: str = ""  # or a `*.py` path as written
    config_path: str | None = None
    config_name: str | None = None
    config_dir: str | None = None
    overrides: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()  # `--option` words after the entry point


def read_command(words: tuple[str, ...]) -> Launch | None:
    """The entry point and config arguments of a command's words, or None when it runs no Python module or script."""
    entry = None
    module = script = ""
    for i, word in enumerate(words):
        if word == "-m" and i + 1 < len(words):
            module, entry = words[i + 1], i + 1
            break
        if word.endswith(".py") and not word.startswith("-"):
            script, entry = word, i
            break
    if entry is None:
        return None
    rest = words[entry + 1:]
    found: dict[str, str] = {}
    overrides, flags = [], []
    i = 0
    while i < len(rest):
        word = rest[i]
        name, eq, value = word.partition("=")
        option = next((o for o in _CONFIG_PATH + _CONFIG_NAME + _CONFIG_DIR if name == o), None)
        if option is not None:
            if not eq and i + 1 < len(rest):
                value, i = rest[i + 1], i + 1
            found[option] = value
        elif word.startswith("-"):
            flags.append(name)
        elif eq or word.startswith("~"):  # `~key` deletes a key: an override without `=`
            overrides.append(word)
        i += 1

    def first(options):
        return next((found[o] for o in options if o in found), None)

    return Launch(module, script, first(_CONFIG_PATH), first(_CONFIG_NAME), first(_CONFIG_DIR), tuple(overrides),
                  tuple(flags))


@dataclass(frozen=True)
class OptionDefault:
    """A plain argparse option's literal default: `parser.add_argument("--dtype", default="fp16", choices=[...])`."""

    flag: str  # the first long option string as declared (`--dtype`)
    dest: str  # where argparse stores it (`dest=`, else the flag without dashes, `-` as `_`)
    value: str  # the default, as a string ("fp16", "True")
    annotation: str  # the values its literal `choices` allow, in the dataclass spelling (`Literal['fp16', 'bf16']`); ""
    line: int  # the line of the default's literal


@dataclass(frozen=True)
class EntryFacts:
    hydra_path: str | None = None  # @hydra.main config_path (None: no decorator)
    hydra_name: str | None = None
    has_hydra: bool = False
    structured: str | None = None  # the class OmegaConf.structured builds
    from_cli: bool = False
    options: frozenset[str] = frozenset()  # argparse option strings
    parser_classes: tuple[str, ...] = ()  # the dataclasses an HfArgumentParser/TrlParser turns into options
    # plain argparse options with a literal default; () where the file has subcommands (whose options are not the
    # command's without its subcommand word)
    option_defaults: tuple[OptionDefault, ...] = ()


@lru_cache(maxsize=64)
def entry_facts(path: str) -> EntryFacts:
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        raise SchemaUnread(f"{path}: cannot be read as Python ({type(exc).__name__})") from None
    hydra_path = hydra_name = structured = None
    has_hydra = from_cli = False
    options: set[str] = set()
    parser_classes: list[str] = []
    option_defaults: list[OptionDefault] = []
    subcommands = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if name == "main" and owner == "hydra":
            has_hydra = True
            args = dict(zip(("config_path", "config_name"), node.args))
            args.update({kw.arg: kw.value for kw in node.keywords if kw.arg})
            hydra_path = _literal(args.get("config_path"))
            hydra_name = _literal(args.get("config_name"))
        elif name == "structured" and owner == "OmegaConf" and node.args:
            arg = node.args[0]
            target = arg.func if isinstance(arg, ast.Call) else arg
            structured = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        elif name == "from_cli" and owner == "OmegaConf":
            from_cli = True
        elif name in _DATACLASS_PARSERS and node.args:
            arg = node.args[0]
            items = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
            parser_classes += [n for n in (_class_name(i) for i in items) if n]
        elif name == "add_argument":
            options.update(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                           and a.value.startswith("-"))
            default = _option_default(node)
            if default is not None:
                option_defaults.append(default)
        elif name == "add_subparsers":
            subcommands = True
    return EntryFacts(hydra_path, hydra_name, has_hydra, structured, from_cli, frozenset(options),
                      tuple(dict.fromkeys(parser_classes)), () if subcommands else tuple(option_defaults))


def _option_default(call: ast.Call) -> OptionDefault | None:
    """The literal default of a value-taking long option (`action` absent or "store"); None for anything else: a
    switch's default (`store_true`) is what leaving it off means, not a value the command leaves in force."""
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = next((f for f in flags if f.startswith("--")), None)
    keywords = {kw.arg: kw.value for kw in call.keywords if kw.arg}
    default = keywords.get("default")
    if long is None or not isinstance(default, ast.Constant) or isinstance(default.value, (type(None), bytes)):
        return None
    action = keywords.get("action")
    if action is not None and _literal(action) != "store":
        return None
    dest = _literal(keywords.get("dest")) or long[2:].replace("-", "_")
    # Only literal `choices` prove which words the program handles: without them argparse passes any word on, and
    # the code that maps it (`if dtype == "fp16": ... elif dtype == "bf16": ...`) may know no other.
    annotation = ""
    choices = keywords.get("choices")
    if isinstance(choices, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in choices.elts):
        annotation = f"Literal[{', '.join(repr(e.value) for e in choices.elts)}]"
    return OptionDefault(long, dest, str(default.value), annotation, default.lineno)


# transformers' HfArgumentParser and TRL's TrlParser (a subclass): each dataclass field becomes `--field`
# (transformers/hf_argparser.py `_add_dataclass_arguments`).
_DATACLASS_PARSERS = ("HfArgumentParser", "TrlParser")


def _class_name(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _literal(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def module_file(root: str, package_dir: str | None, launch: Launch, script_dir: str,
                search_up: bool = False) -> str | None:
    """The file the command runs, when it is in the tree. A relative script path is looked up beside the command's
    file, then at the tree's root; with `search_up`, in the folders between them too, nearest first: a launch script
    kept in a subfolder (`training_scripts/opt/run.sh` running `main.py`) is run from the folder that holds the entry
    point (`bash training_scripts/opt/run.sh` there), which is neither."""
    bases = [root] + ([os.path.dirname(package_dir)] if package_dir else [])
    if launch.module:
        parts = launch.module.split(".")
        for base in bases:
            for candidate in (os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__main__.py")):
                if os.path.isfile(candidate):
                    return candidate
        return None
    for base in (script_dir, *(_folders_up(script_dir, root) if search_up else ()), root):
        candidate = os.path.normpath(os.path.join(base, launch.script))
        if os.path.isfile(candidate):
            return candidate
    return None


def _folders_up(folder: str, root: str) -> list[str]:
    """The folders above `folder`, nearest first, below `root`; [] where `folder` is not inside `root`."""
    folder, root = os.path.abspath(folder), os.path.abspath(root)
    if os.path.commonpath([folder, root]) != root:
        return []
    out = []
    while True:
        parent = os.path.dirname(folder)
        if parent == folder or parent == root or len(parent) < len(root):
            return out
        out.append(parent)
        folder = parent


def schemas_for(root: str, package_dir: str | None, words: tuple[str, ...], script_dir: str) -> tuple[KeySchema, ...] | None:
    """The schemas a command's config is checked against (all must accept a key), None when the command runs no
    entry point of the tree. Raises SchemaUnread when the tree's entry point is there but its config is not readable."""
    from rlcompat.schema.hydra_static import compose
    from rlcompat.schema.structured import dataclass_keys

    launch = read_command(words)
    if launch is None:
        return None
    path = module_file(root, package_dir, launch, script_dir)
    shown_root = root.rstrip(os.sep) + os.sep
    if path is None:
        if launch.module == VERL_PPO[0] and package_dir is not None:
            facts, base = EntryFacts(VERL_PPO[1], VERL_PPO[2], True), os.path.join(package_dir, "trainer")
        elif package_dir is not None and launch.module.startswith(os.path.basename(package_dir) + "."):
            raise SchemaUnread(f"{launch.module} is the tree's module, but its file is not in the tree")
        else:
            return None  # an installed program's config: not the tree's to prove
    else:
        facts, base = entry_facts(path), os.path.dirname(path)
    schemas: list[KeySchema] = []
    if facts.has_hydra:
        config_dir, name = _hydra_config(launch, facts, base, root, script_dir)
        if config_dir is not None:
            shown = "./" + os.path.relpath(config_dir, root).replace(os.sep, "/") if config_dir.startswith(shown_root) else config_dir
            bases = (root,) + ((os.path.dirname(package_dir),) if package_dir else ())
            schemas.append(compose(config_dir, name, launch.overrides, shown, bases))
    if facts.structured:
        schemas.append(dataclass_keys(root, path, facts.structured))
    elif facts.from_cli and not facts.has_hydra:
        raise SchemaUnread(f"{os.path.relpath(path, root)} reads OmegaConf.from_cli without a structured config")
    if not schemas and facts.parser_classes:
        from rlcompat.schema.structured import parser_schema

        schemas.append(parser_schema(root, path, facts.parser_classes))
    if not schemas and facts.options:
        schemas.append(KeySchema("argparse", "./" + os.path.relpath(path, root).replace(os.sep, "/"),
                                 frozenset(o.lstrip("-") for o in facts.options)))
    return tuple(schemas) or None


def hydra_config_of(root: str, package_dir: str | None, words: tuple[str, ...],
                    script_dir: str) -> tuple[str, str, tuple[str, ...]] | None:
    """(config directory, config name, overrides) Hydra composes for a command of the tree, or None when the command
    runs no Hydra entry point of the tree. Raises SchemaUnread as `schemas_for`."""
    launch = read_command(words)
    if launch is None:
        return None
    path = module_file(root, package_dir, launch, script_dir)
    if path is None:
        if launch.module != VERL_PPO[0] or package_dir is None:
            return None
        facts, base = EntryFacts(VERL_PPO[1], VERL_PPO[2], True), os.path.join(package_dir, "trainer")
    else:
        facts, base = entry_facts(path), os.path.dirname(path)
    if not facts.has_hydra:
        return None
    config_dir, name = _hydra_config(launch, facts, base, root, script_dir)
    if config_dir is None:
        return None
    from rlcompat.schema.hydra_static import search_dirs

    found = search_dirs(config_dir, name, (root,) + ((os.path.dirname(package_dir),) if package_dir else ()))
    extra = (f"hydra.searchpath=[{','.join('file://' + d for d in found)}]",) if found else ()
    return config_dir, name, launch.overrides + extra


def _hydra_config(launch: Launch, facts: EntryFacts, base: str, root: str, script_dir: str) -> tuple[str | None, str]:
    name = launch.config_name or facts.hydra_name
    if launch.config_path is not None:
        written = launch.config_path
        if "$" in written or not written:
            raise SchemaUnread(f"--config-path {written!r} is not a path rlcompat can follow")
        # Hydra reads a relative --config-path from the directory of the file that declares @hydra.main (`base`:
        # verl/trainer/ for main_ppo, https://hydra.cc/docs/advanced/hydra-command-line-flags/), as run_config does;
        # the tree's root and the script's folder are read after it.
        candidates = [written] if os.path.isabs(written) else [os.path.join(base, written), os.path.join(root, written),
                                                               os.path.join(script_dir, written)]
        config_dir = next((c for c in candidates if os.path.isdir(c)), None)
        if config_dir is None:
            raise SchemaUnread(f"--config-path {written}: no such directory in the tree")
    elif facts.hydra_path is not None:
        config_dir = os.path.normpath(os.path.join(base, facts.hydra_path))
    else:
        return None, ""
    if launch.config_dir is not None:
        raise SchemaUnread(f"--config-dir {launch.config_dir}: more config search paths than rlcompat follows")
    if not name:
        raise SchemaUnread("the entry point names no config (config_name) and the command gives none")
    return config_dir, name
