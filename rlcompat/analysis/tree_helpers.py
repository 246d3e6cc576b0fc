"""Helpers of the scanned tree that choose bf16 by asking `torch.cuda.is_bf16_supported()`.

A project's own function such as litgpt 0.5.13's `get_default_supported_precision` (litgpt/utils.py:363-380)
returns "bf16-mixed" when `torch.cuda.is_bf16_supported()` is true; without `including_emulation=False` that is true
on any card that can hold a bfloat16 tensor (torch 2.13.0 torch/cuda/__init__.py:191-211) [S1][S3]. RLC110 reports
the probe in the helper's own file; a caller in another file (litgpt/pretrain.py:127) gets the bf16 it picks, which
is what this module finds: the helper's file is read from the tree, never imported.
"""

from __future__ import annotations

import ast
import os
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_BF16_WORDS = ("bf16", "bfloat16")
_PROBE = "is_bf16_supported"


@dataclass(frozen=True)
class Bf16Pick:
    path: str  # the helper's file
    probe_line: int  # the line of its is_bf16_supported() call
    value: str  # what it returns there, as written


@lru_cache(maxsize=1024)
def module_file(root: str, dotted_module: str) -> str | None:
    """The tree's own file for `a.b` (root/a/b.py or root/a/b/__init__.py, also under root/src), or None. Cached:
    a scan asks for the same imported modules (torch.cuda, ...) file after file."""
    parts = [p for p in dotted_module.split(".") if p]
    if not parts:
        return None
    for base in (root, os.path.join(root, "src")):
        for candidate in (os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
    return None


def bf16_pick(path: str, function: str) -> Bf16Pick | None:
    """Where the module-level `function` of the file at `path` returns a bf16 value under an
    `is_bf16_supported()` test without `including_emulation=False`, or None."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _bf16_picks(path, stamp).get(function)


@lru_cache(maxsize=256)
def _bf16_picks(path: str, stamp: int) -> dict[str, Bf16Pick]:
    """Each module-level function of the file that picks bf16 that way. Cached by file and modification time; the
    parsed module is not kept (a scan holds one file's tree at a time)."""
    del stamp  # part of the cache key only
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if not _may_probe(text):
            return {}  # no function of it can pick that way: not parsed (torch's common_utils.py is 968 KB)
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return {}
    picks = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pick = _function_pick(path, node)  # a later `def` of the same name is the one called
            if pick is None:
                picks.pop(node.name, None)
            else:
                picks[node.name] = pick
    return picks


def _may_probe(text: str) -> bool:
    """Whether `text` can call `is_bf16_supported` (`_probe`): it spells the name, or another spelling of it that
    CPython reads as the same name (NFKC)."""
    return _PROBE in text or (not text.isascii() and _PROBE in unicodedata.normalize("NFKC", text))


def _function_pick(path: str, node: ast.AST) -> Bf16Pick | None:
    for test_node in ast.walk(node):
        if isinstance(test_node, ast.If):
            chosen = test_node.body
        elif isinstance(test_node, ast.IfExp):
            chosen = [ast.Return(value=test_node.body)]
        else:
            continue
        probe = _probe(test_node.test)
        if probe is None:
            continue
        value = next((v for stmt in chosen for n in ast.walk(stmt) if isinstance(n, ast.Return) and n.value is not None
                      for v in [_bf16_value(n.value)] if v), None)
        if value is not None:
            return Bf16Pick(path, probe.lineno, value)
    return None


def _probe(test: ast.AST) -> ast.Call | None:
    for n in ast.walk(test):
        if isinstance(n, ast.Call):
            name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            if name == _PROBE and not any(k.arg == "including_emulation" for k in n.keywords):
                return n
    return None


def _bf16_value(expr: ast.AST) -> str | None:
    for n in ast.walk(expr):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and any(w in n.value.lower() for w in _BF16_WORDS):
            return repr(n.value)
        if isinstance(n, ast.Attribute) and n.attr == "bfloat16":
            return ast.unparse(n)
    return None
