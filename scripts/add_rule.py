"""Start a new rule: its file in the catalog and its row in the code registry, nothing else.

    .venv/bin/python scripts/add_rule.py --family dtype --name bf16-in-my-trainer --code RLC199 --kind python

writes `rules/dtype/bf16_in_my_trainer.py` (a rule class with empty text, no examples and empty declarations of what
its findings spell, from which its triggers are derived: a rule never writes triggers) and adds
`"RLC199": "dtype.bf16_in_my_trainer"` to `rules/codes.py`, in code order. The new rule fails
`tests/test_rule_examples.py::test_rule_metadata_is_complete` until its title, what, why, fix_safety and at least
one bad and one good example are written: the catalog refuses a rule that says nothing. CONTRIBUTING.md has the
rest of the walkthrough (sources, knowledge rows, generated docs).

Kinds pick the base class, i.e. what the rule reads:
  python   libcst nodes of Python files (rlcompat.lang.python.PythonRule)
  config   settings of YAML/JSON/TOML configs, launch-script flags and Hydra overrides (rlcompat.lang.settings.ConfigRule)
  declared requirements, pyproject, conda and Dockerfile pins (rlcompat.lang.declared.DeclaredRule)
Exit codes: 0 written, 2 refused (one line on stderr saying why; nothing is written).
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE_ROW = re.compile(r'^    "(RLC\d{3})": "([a-z_]+)\.([a-z0-9_]+)",$', re.MULTILINE)

KINDS = {
    "python": ("PythonRule",
               '    # What the code of every finding spells: its triggers and narrowing follow (rlcompat/rule.py); declare\n'
               '    # one or more of names = ("bfloat16",), strings = ("auto",), calls = ("from_pretrained",),\n'
               '    # keywords = ("attn_implementation",); and what its findings rest on, if it can say:\n'
               '    # resolves_from = ("torch",), spelled = re.compile(...)\n'
               '    names = ()\n'),
    "config": ("ConfigRule",
               '    # What the code of every finding spells: the words of the keys, flags or commands it reads (its triggers\n'
               '    # follow: rlcompat/rule.py); verl_commands = True if it reports at verl launch commands (a key they\n'
               '    # leave at a bad default)\n'
               '    names = ()\n'
               '    # languages = ConfigRule.languages | {"python"}  # if Python writes its settings too\n'),
    "declared": ("DeclaredRule", '    names = ()  # the package names it reads: its triggers follow (rlcompat/rule.py)\n'),
}

TEMPLATE = '''from __future__ import annotations

from rlcompat.contract import Bad, {base}, Good


class {cls}({base}):
    code = "{code}"
    name = "{name}"
    title = ""  # one line: what is wrong, for which cards
    what = ""  # what the rule finds, in the files' own words
    why = ""  # why it fails on the target, citing sources as [Sn] (rlcompat/knowledge/data/sources.toml)
    fix_safety = ""  # what the fix writes and why it cannot stop the run (or why it is unsafe)
{extra}    sources = ()

    bad = ()  # Bad("<code the rule reports>", fixed="<the fixed code>", target="sm61")
    good = ()  # Good("<close code the rule must not report>")

    @classmethod
    def applies_to(cls, target) -> bool:
        return True  # which targets have the hazard: ask target facts (rlcompat.knowledge.targets.Target)
'''


class Refused(Exception):
    pass


def snake(name: str) -> str:
    return name.replace("-", "_")


def check(root: Path, family: str, name: str, code: str) -> tuple[Path, str]:
    rules = root / "rules"
    families = sorted(p.name for p in rules.iterdir() if (p / "__init__.py").is_file() and p.name != "__pycache__")
    if family not in families:
        raise Refused(f"--family {family!r}: not a rule family; one of {', '.join(families)}")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        raise Refused(f"--name {name!r}: use kebab-case words (bf16-in-my-trainer)")
    if keyword.iskeyword(snake(name)):
        raise Refused(f"--name {name!r}: a Python keyword cannot name a module")
    if not re.fullmatch(r"RLC\d{3}", code):
        raise Refused(f"--code {code!r}: codes look like RLC123")
    registry = (rules / "codes.py").read_text("utf-8")
    taken = {m.group(1): f"{m.group(2)}.{m.group(3)}" for m in CODE_ROW.finditer(registry)}
    if code in taken:
        raise Refused(f"--code {code}: already {taken[code]} in rules/codes.py")
    module = f"{family}.{snake(name)}"
    if module in taken.values():
        raise Refused(f"{module}: already registered in rules/codes.py")
    path = rules / family / f"{snake(name)}.py"
    if path.exists():
        raise Refused(f"{path}: exists; pick another --name")
    return path, registry


def with_row(registry: str, code: str, module: str) -> str:
    """rules/codes.py with the new row placed in code order (the registry reads as a sorted table)."""
    rows = list(CODE_ROW.finditer(registry))
    if not rows:
        raise Refused("rules/codes.py: no registry rows found; was it reformatted?")
    row = f'    "{code}": "{module}",\n'
    after = [m for m in rows if m.group(1) > code]
    at = after[0].start() if after else rows[-1].end() + 1
    return registry[:at] + row + registry[at:]


def add_rule(root: Path, family: str, name: str, code: str, kind: str) -> Path:
    path, registry = check(root, family, name, code)
    base, extra = KINDS[kind]
    cls = "".join(part.capitalize() for part in snake(name).split("_"))
    text = TEMPLATE.format(base=base, cls=cls, code=code, name=name, extra=extra)
    compile(text, str(path), "exec")  # a template that does not parse is this script's bug: write nothing
    new_registry = with_row(registry, code, f"{family}.{snake(name)}")
    path.write_text(text, "utf-8")
    (root / "rules" / "codes.py").write_text(new_registry, "utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", required=True, help="rules/<family>/ (dtype, attention, ...)")
    parser.add_argument("--name", required=True, help="kebab-case rule name; the file is its snake_case")
    parser.add_argument("--code", required=True, help="an unused code, RLCnnn, in the family's hundred")
    parser.add_argument("--kind", choices=sorted(KINDS), default="python")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)  # tests write into a copy
    args = parser.parse_args(argv)
    try:
        path = add_rule(args.root, args.family, args.name, args.code, args.kind)
    except Refused as exc:
        print(f"add_rule: {exc}", file=sys.stderr)
        return 2
    rel = path.relative_to(args.root)
    print(f"wrote {rel} and its row in rules/codes.py. Next: fill title/what/why/fix_safety, bad and good examples;\n"
          f"  .venv/bin/python -m pytest -q tests/test_rule_examples.py -k {args.code} tests/test_rule_registry.py\n"
          f"  .venv/bin/python -m rlcompat.docs docs/rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
