"""The YAML front end: ruamel.yaml's round-trip loader gives every key's position; settings come out as dotted keys.

Fixes never re-dump the document: a setting's value span is the exact characters of its scalar (inside its
quotes), so a fix replaces those and every comment, blank line, quote style and flow mapping stays as it was.
A file inside verl's `trainer/config/<group>/` is a Hydra config group: its keys are mounted where
verl's knowledge (rules/verl/<version>.toml) says, e.g. rollout/rollout.yaml under `actor_rollout_ref.rollout`.
"""

from __future__ import annotations

import os
import warnings
from typing import Sequence

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from rlcompat.lang.settings import ConfigRule, ConfigView, Setting, Span, run_rules
from rlcompat.model import Finding
from rlcompat.textpos import LineIndex

PARSE_ERRORS = (YAMLError,)
VERL_TOP_KEYS = {"actor_rollout_ref", "critic", "trainer", "algorithm", "reward_model", "data"}


class YamlDocuments(list):
    """The parsed documents of one file (a file may hold several, separated by `---`)."""


def parse(text: str) -> YamlDocuments:
    yaml = YAML(typ="rt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return YamlDocuments(yaml.load_all(text))


def syntax_error_location(exc: YAMLError) -> tuple[int, int, str]:
    if isinstance(exc, MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return mark.line + 1, mark.column + 1, f"{exc.problem or exc.context or 'invalid YAML'}"
    return 1, 1, str(exc).splitlines()[0] if str(exc) else "invalid YAML"


def check(docs: YamlDocuments, text: str, path: str, rules: Sequence[ConfigRule], target) -> list[Finding]:
    from rlcompat.verl_knowledge import knowledge_for

    index = LineIndex(text)
    mounts = _mounts_for(path, knowledge_for(path).mounts)
    views = []
    for doc in docs:
        if not isinstance(doc, CommentedMap):
            continue
        settings: list[Setting] = []
        _collect(doc, "", text, index, settings, flow=False)
        is_verl = mounts != ("",) or bool(VERL_TOP_KEYS & {str(k) for k in doc})
        views.append(ConfigView("yaml", settings, mounts=mounts, is_verl=is_verl))
    return run_rules(views, text, path, rules, target)


def _mounts_for(path: str, table: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    normalized = path.replace(os.sep, "/")
    for group_file, at in table.items():
        if normalized.endswith("trainer/config/" + group_file):
            return at
    return ("",)


def _collect(node: CommentedMap, prefix: str, text: str, index: LineIndex, out: list[Setting], flow: bool) -> None:
    flow = flow or node.fa.flow_style()
    for key, value in node.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, CommentedMap):
            _collect(value, dotted, text, index, out, flow)
            continue
        try:
            kline, kcol = node.lc.key(key)
        except (KeyError, TypeError):
            continue  # a key merged in from an anchor (`<<: *base`) has no position of its own here
        key_start = index.offset(kline + 1, kcol)
        key_span = Span(key_start, key_start + len(str(key)))
        if isinstance(value, CommentedSeq) or value is None:
            # A list, or no value (`key:`, `key: null`, `key: ~`): nothing a rule rewrites in place.
            out.append(Setting(dotted, None if isinstance(value, CommentedSeq) else "", key_span, None))
            continue
        vline, vcol = node.lc.value(key)
        start = index.offset(vline + 1, vcol)
        literal, span = _scalar_at(text, start, flow)
        out.append(Setting(dotted, literal, key_span, span))


def _scalar_at(text: str, start: int, flow: bool) -> tuple[str | None, Span | None]:
    """The scalar written at `start`: its unquoted text and the span to replace (inside quotes)."""
    if start >= len(text):
        return "", None
    first = text[start]
    if first in "'\"":
        end = start + 1
        while end < len(text):
            ch = text[end]
            if ch == "\\" and first == '"':
                end += 2
                continue
            if ch == first:
                if first == "'" and text[end + 1: end + 2] == "'":
                    end += 2
                    continue
                break
            if ch in "\r\n":
                return None, None  # a multi-line quoted scalar: not rewritten in place
            end += 1
        return text[start + 1: end], Span(start + 1, end)
    if first in "|>&*!{[":
        return None, None  # block scalars, anchors, aliases, tags, flow collections: no in-place rewrite
    end = start
    stops = "\r\n" + (",]}" if flow else "")
    while end < len(text) and text[end] not in stops:
        if text[end] == "#" and end > start and text[end - 1] in " \t":
            break
        end += 1
    raw = text[start:end].rstrip(" \t")
    return raw, Span(start, start + len(raw))
