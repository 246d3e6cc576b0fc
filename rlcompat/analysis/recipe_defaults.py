"""Defaults of a recipe's own dataclasses that a launch command leaves in force.

A recipe repository's entry point (`python train.py ...`, `accelerate launch train.py ...`, `deepspeed main.py ...`)
often parses its options with HfArgumentParser/TrlParser over dataclasses the tree defines, merges
`OmegaConf.from_cli()` into an `OmegaConf.structured(...)` dataclass, or declares them with plain argparse
(`parser.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])`). A default such as `bf16: bool = True`,
`attn_implementation: str = "flash_attention_2"` or that `--dtype` then selects a hazard for every command that does
not set it; the command is where the user chooses, so that is where RLC122/RLC211 report it, citing the default's
file:line. A plain argparse option is fixed with `--flag value` only where its literal `choices` list the value
(argparse checks a given value against them); without choices nothing proves the program handles the word.

A fix is offered only where the schema proves the option exists and how the parser spells the value:
HfArgumentParser makes each field `--field` (and `--field-name` for `field_name`), a `bool` field's value goes through
`string_to_bool` (yes/true/t/y/1, no/false/f/n/0), a `str` field takes any word, a `Literal[...]` field only its
choices [S156]; `OmegaConf.from_cli()` reads `field=value` words, merged into the structured config, which refuses
an undeclared field [S157]. The fixed command is then parsed statically by rlcompat/schema/loadcheck.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rlcompat.lang.settings import ConfigView
from rlcompat.findings import Edit

_CONFIG_OPTIONS = ("--config", "--config_file", "--config-file")


@dataclass(frozen=True)
class LeftDefault:
    """A field default of the tree's dataclass that a command leaves in force."""

    field: str
    value: str  # the default, unquoted: "True", "bfloat16"
    annotation: str
    owner: str  # the dataclass that declares it
    where: str  # "src/recipe/configs.py:42", relative to the tree's root
    spelling: str  # "argparse" (HfArgumentParser/TrlParser/argparse: `--field value`) | "cli" (`field=value`)
    flag: str = ""  # a plain argparse option's string as declared (`--actor-lr`); "" for a dataclass field

    @property
    def label(self) -> str:
        """How a message names it: the option (`--dtype`), or the dataclass field (`ScriptArguments.bf16`)."""
        return self.flag or f"{self.owner}.{self.field}"

    def option(self, value: str) -> str:
        """The command-line words that set this field to `value`, as its parser takes them."""
        if self.flag:
            return f"{self.flag} {value}"
        return f"--{self.field} {value}" if self.spelling == "argparse" else f"{self.field}={value}"

    def why_no_fix(self, value: str) -> str:
        """Why no option setting this field to `value` is offered (`append_option` gave none)."""
        if self.spelling == "structured":
            return "the entry point merges no command-line words into its structured config"
        if self.flag:
            choices = self.annotation[len("Literal["):-1] if self.annotation.startswith("Literal[") else ""
            if choices:
                return f"{self.flag} takes only {choices} (its choices)"
            return f"{self.flag} lists no choices, so nothing proves the program takes {value}"
        return f"{self.field}: {self.annotation} does not prove the parser takes {value}"

    def accepts(self, value: str) -> bool:
        """Whether the parser takes `value` for this field, as far as its annotation proves it."""
        from rlcompat.schema.structured import parses

        if self.spelling == "cli":
            return self.annotation.strip() in ("bool", "str", "Optional[str]", "Optional[bool]")
        return parses(self.annotation, value) is True


def left_defaults(view: ConfigView, ctx) -> tuple[LeftDefault, ...]:
    """The tree-defined dataclass fields with a literal default that this command's entry point parses and the command
    does not set (neither as an option nor in the `--config` YAML it passes); () for other views."""
    if view.kind != "command" or view.is_verl or not view.command_words:
        return ()
    memo = ctx.memo.setdefault("recipe_defaults", {})
    key = (view.anchor.start if view.anchor else -1, view.command_words)
    if key not in memo:
        memo[key] = _left(view, ctx)
    return memo[key]


def _left(view: ConfigView, ctx) -> tuple[LeftDefault, ...]:
    from rlcompat.knowledge.identity import tree_root
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.structured import field_defaults
    from rlcompat.schema.tree import entry_facts, module_file, read_command

    if not ctx.path or not os.path.isfile(ctx.path):
        return ()
    launch = read_command(view.command_words)
    if launch is None:
        return ()
    root = tree_root(ctx.path)
    script_dir = os.path.dirname(os.path.abspath(ctx.path))
    entry = module_file(root, None, launch, script_dir, search_up=True)
    if entry is None:
        return ()
    try:
        facts = entry_facts(entry)
    except SchemaUnread:
        return ()
    if facts.parser_classes:
        classes, spelling = facts.parser_classes, "argparse"
    elif facts.structured and not facts.has_hydra:
        classes, spelling = (facts.structured,), "cli" if facts.from_cli else "structured"
    elif facts.option_defaults and not facts.has_hydra:
        return _left_options(view, ctx, launch, facts, entry, root, script_dir)
    else:
        return ()
    ctx.record_reads([entry])
    set_here = _set_by_command(view, launch, spelling, script_dir, root)
    if set_here is None:
        return ()  # a --config file rlcompat cannot read: what it sets is unknown
    out: list[LeftDefault] = []
    for name in classes:
        try:
            fields = field_defaults(root, entry, name)
        except SchemaUnread:
            continue
        ctx.record_reads(sorted({f.file for f in fields}))
        for f in fields:
            if f.default is None or f.name in set_here:
                continue
            value = f.default.strip("'\"")
            where = f"{os.path.relpath(f.file, root).replace(os.sep, '/')}:{f.line}"
            out.append(LeftDefault(f.name, value, f.annotation, f.owner, where, spelling))
    return tuple(out)


def _left_options(view: ConfigView, ctx, launch, facts, entry: str, root: str,
                  script_dir: str) -> tuple[LeftDefault, ...]:
    """The plain argparse defaults of the entry point that the command leaves in force."""
    ctx.record_reads([entry])
    set_here = _set_by_command(view, launch, "argparse", script_dir, root)
    if set_here is None:
        return ()
    where = os.path.relpath(entry, root).replace(os.sep, "/")
    owner = os.path.basename(entry)
    return tuple(LeftDefault(o.dest, o.value, o.annotation, owner, f"{where}:{o.line}", "argparse", o.flag)
                 for o in facts.option_defaults
                 if o.dest not in set_here and o.flag.lstrip("-").replace("-", "_") not in set_here)


def _set_by_command(view: ConfigView, launch, spelling: str, script_dir: str, root: str) -> set[str] | None:
    """The fields the command sets: its options after the entry point (`--bf16`, `--bf16=False`, `--no_bf16`),
    `field=value` words, and the top-level keys of the YAML its `--config` names (TrlParser reads it as defaults) or
    of a YAML/JSON file given as its first argument (the recipe parses that file instead of options)."""
    names = {flag.lstrip("-").replace("-", "_") for flag in launch.flags}
    names |= {n[3:] for n in names if n.startswith("no_")}  # HfArgumentParser's `--no_<field>` for a True bool
    names |= {o.split("=", 1)[0].lstrip("+") for o in launch.overrides}
    words = list(view.command_words)
    entry = launch.module or launch.script
    words = words[words.index(entry) + 1:] if entry in words else []  # options before it are the launcher's
    for i, word in enumerate(words):
        option, eq, inline = word.partition("=")
        path = None
        if option in _CONFIG_OPTIONS and spelling == "argparse":
            path = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
        elif i == 0 and spelling == "argparse" and word.endswith((".yaml", ".yml", ".json")):
            path = word  # `train.py recipe.yaml`: HfArgumentParser.parse_yaml_file/parse_json_file read it whole
        if path is not None:
            keys = _yaml_keys(path, script_dir, root)
            if keys is None:
                return None
            names |= keys
    return names


def _yaml_keys(path: str, script_dir: str, root: str) -> set[str] | None:
    if not path or "$" in path:
        return None
    for base in (root, script_dir):
        full = path if os.path.isabs(path) else os.path.join(base, path)
        if os.path.isfile(full):
            try:
                import yaml

                with open(full, encoding="utf-8", errors="replace") as fh:
                    data = yaml.safe_load(fh)
            except (OSError, Exception):  # noqa: BLE001 - a config that does not load: its keys are unknown
                return None
            return set(data) if isinstance(data, dict) else set()
    return None


def append_option(view: ConfigView, text: str, left: LeftDefault, value: str) -> Edit | None:
    """An edit appending the option that sets `left` to `value` at the end of the command, spelled as its parser
    takes it; None where the command's end is not a written word."""
    if not view.word_spans:
        return None
    end = max(s.end for s in view.word_spans)
    if end <= 0 or end > len(text):
        return None
    if left.spelling == "structured":
        return None  # no CLI merge into the structured config: nothing on the command sets the field
    return Edit(end, end, f" {left.option(value)}")
