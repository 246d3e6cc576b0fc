"""A config key the tree's own code reads only while a sibling key holds one of a few values.

HALOs (ContextualAI/HALOs 4831988) loads its reward model with `'attn_implementation':
config.model.reward_model.attn_implementation if config.model.reward_model.dtype in ["float16", "bfloat16"] else
"eager"` (launch.py:302): with base_model.yaml's `reward_model.dtype: float32` (:70) the model is built with eager
attention whatever `reward_model.attn_implementation` says (:71). So where every read of a YAML key in the tree's
Python is such a conditional expression (the key's attribute chain as its value, a test of a sibling of the same
object against literal values, a literal otherwise), and the file that writes the key writes that sibling with a
literal outside the tested values, the key reaches no run: a rule judging its value leaves it alone.

Conservative wherever the run could differ: a read outside such an expression, a sibling the file does not write (a
Hydra group file that takes it from its defaults) or writes as no literal, a launch file (shell, Makefile, Dockerfile,
job spec, README commands) or another YAML file of the tree that spells the sibling (a command override, a group file
that sets it), no read found, or a tree too large to read: the key stays live. Scanning parses; it runs nothing.
"""

from __future__ import annotations

import ast
import os
import re

from rlcompat.analysis.entry_switches import LAUNCH_LANGUAGES
from rlcompat.analysis.tree_files import bounded_text, tree_files
from rlcompat.knowledge.identity import tree_root
from rlcompat.lang.languages import by_file_name

_LIVE = None  # a read that is not a guarded one


def read_only_while_off(view, ctx, setting) -> bool:
    """Whether every read of the YAML `setting`'s key in its tree's Python is guarded by a sibling the same file sets
    to a value outside the guard's, and nothing else in the tree spells that sibling."""
    if view.kind != "yaml" or not ctx.path or not os.path.isfile(ctx.path) or not setting.key:
        return False
    parent, _, leaf = setting.key.rpartition(".")
    memo = ctx.memo.setdefault("guarded_reads", {})
    root = tree_root(os.path.abspath(ctx.path))
    if (root, leaf) not in memo:
        memo[(root, leaf)] = _reads(root, leaf)
    reads = memo[(root, leaf)]
    if reads is None:
        return False
    ctx.record_reads(sorted({path for path, _, _ in reads}))
    siblings: set[str] = set()
    matched = False
    for _, chain, guard in reads:
        if chain is None:
            return False  # a file that spells the key where no read of it is a guarded one (_reads)
        if chain != setting.key and not chain.endswith("." + setting.key):
            continue
        matched = True
        if guard is _LIVE:
            return False
        sibling_leaf, values = guard
        sibling = view.get(f"{parent}.{sibling_leaf}" if parent else sibling_leaf)
        if sibling is None or sibling.value is None or sibling.value.strip() in values:
            return False
        siblings.add(f"{parent}.{sibling_leaf}" if parent else sibling_leaf)
    return matched and not any(_spelled_elsewhere(root, os.path.abspath(ctx.path), s, ctx) for s in siblings)


def _reads(root: str, leaf: str) -> list[tuple[str, str, tuple[str, frozenset[str]] | None]] | None:
    """(file, attribute chain, guard) of every attribute read ending in `leaf` in the tree's Python; the guard is
    (sibling attribute, values under which the read is taken) or None for a read outside such an expression; the chain
    None for each file that spells `leaf` where no file has a guarded read of it. None where the tree holds over
    tree_files.MAX_FILES Python files."""
    texts = []
    for path in tree_files(root, lambda p: p.endswith(".py")):
        if path is None:
            return None
        text = bounded_text(path)
        if text is not None and leaf in text:
            texts.append((path, text))
    # A guarded read is written `<chain>.leaf if ...` (closing parentheses, line breaks, continuations and comments
    # between): where no file spells that, every read is live and nothing need be parsed (verl's tree: ~30 files
    # spell attn_implementation, none in that form; parsing them for each of its YAML files doubled a cached scan).
    guarded_form = re.compile(rf"\.{re.escape(leaf)}(?:[\s)\\]|#[^\n]*)*(?<![\w.])if\b")
    if not any(guarded_form.search(text) for _, text in texts):
        return [(path, None, _LIVE) for path, _ in texts]
    out = []
    for path, text in texts:
        try:
            module = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        guarded = {id(n.body): n for n in ast.walk(module) if isinstance(n, ast.IfExp)}
        for node in ast.walk(module):
            if not isinstance(node, ast.Attribute) or node.attr != leaf or not isinstance(node.ctx, ast.Load):
                continue
            chain = _chain(node)
            if chain is None:
                continue
            out.append((path, chain, _guard(guarded.get(id(node)), chain)))
    return out


def _guard(ifexp: ast.IfExp | None, chain: str) -> tuple[str, frozenset[str]] | None:
    """(sibling, values) where `ifexp` takes its body only while a sibling of `chain` is one of literal values and
    otherwise gives a literal; None otherwise."""
    if ifexp is None or not isinstance(ifexp.orelse, ast.Constant):
        return _LIVE
    test = ifexp.test
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], (ast.In, ast.Eq)):
        return _LIVE
    tested = _chain(test.left) if isinstance(test.left, ast.Attribute) else None
    if tested is None or tested.rpartition(".")[0] != chain.rpartition(".")[0]:
        return _LIVE
    right = test.comparators[0]
    items = right.elts if isinstance(test.ops[0], ast.In) and isinstance(right, (ast.List, ast.Tuple, ast.Set)) else [right]
    if not items or not all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
        return _LIVE
    return tested.rpartition(".")[2], frozenset(i.value for i in items)


def _chain(node: ast.AST) -> str | None:
    """`config.model.reward_model.dtype` for a chain of attributes on a name; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _spelled_elsewhere(root: str, own: str, sibling: str, ctx) -> bool:
    """Whether a launch file or another YAML file of the tree may set `sibling`: its dotted key in a command override,
    or (a YAML file) its last segment as a mapping key. A tree too large to read counts as one that does."""
    dotted = re.compile(rf"(?<![\w-]){re.escape(sibling)}\s*[=:]")
    as_key = re.compile(rf"^\s*{re.escape(sibling.rpartition('.')[2])}\s*:", re.MULTILINE)
    for path in tree_files(root):
        if path is None:
            return True
        if path == own:
            continue
        language = by_file_name(path, explicit=True)
        if language is None or language.name not in LAUNCH_LANGUAGES:
            continue
        text = bounded_text(path)
        if text is None:
            continue
        if dotted.search(text) or language.name == "yaml" and as_key.search(text):
            ctx.record_reads([path])
            return True
    return False
