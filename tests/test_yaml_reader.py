"""The YAML front end reads parser events: both event sources (libyaml through PyYAML, ruamel.yaml's YAML 1.2
parser) must give the same settings, anchors and merges must behave, and invalid YAML is an error with a place."""

from __future__ import annotations

import glob
import os

import pytest

from rlcompat.api import scan_source
from rlcompat.config import Options
from rlcompat.pipeline.runner import Checker
from rlcompat.lang import yaml as yaml_fe
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang.textpos import LineIndex

SM61 = resolve_target("sm61")
HERE = os.path.dirname(__file__)
FIXTURE_CONFIGS = sorted(glob.glob(os.path.join(HERE, "..", "fixtures", "**", "*.y*ml"), recursive=True))

TRICKY = [
    "base: &b\n  x: 1\n  dtype: bfloat16\nactor_rollout_ref:\n  rollout:\n    <<: *b\n    dtype: bfloat16\n    name: *b\n",
    "a: &s bfloat16\nb: *s\n",
    "a: {x: 1, y: {q: bf16}, z: [1, 2], w: 'a,b'}\n",
    "? [a, b]\n: 1\nc: bfloat16\n",
    "---\na: 1\n---\n- x\n- y\n---\nscalar\n---\nb: {c: d}\n",
    "a:\nb: ~\nc: null\nd: NULL\ne: ''\nf: \"\"\ng: !!null\n",
    "a: |\n  bfloat16\nb: >-\n  x\nc: 'it''s'\nd: \"x\\\"y\"\n",
    "a:\r\n  b: bfloat16\r\n  c: 2\r\n",
    "é: 1\nä:\n  ö: bfloat16 # ü\n",
    "list:\n  - a: 1\n    dtype: bfloat16\n  - &x {b: 2}\nother: *x\n",
    "a.b: bfloat16\n\"quoted key\": x\n",
]


def _settings(text: str, events) -> list[tuple]:
    docs = yaml_fe._read_documents(events(text))
    index = LineIndex(text)
    return [[(s.key, s.value, s.key_span, s.value_span) for s in map(lambda e: yaml_fe._setting(e, text, index), d.entries)]
            for d in docs]


libyaml = yaml_fe._libyaml_events()
needs_libyaml = pytest.mark.skipif(libyaml is None, reason="PyYAML without libyaml")


@needs_libyaml
@pytest.mark.parametrize("text", TRICKY + [open(p, encoding="utf-8").read() for p in FIXTURE_CONFIGS])
def test_libyaml_and_ruamel_events_give_the_same_settings(text):
    assert _settings(text, libyaml) == _settings(text, yaml_fe._ruamel_events)


def test_an_aliased_mapping_holds_its_settings_where_they_are_written():
    text = "base: &b\n  dtype: bfloat16\nactor_rollout_ref:\n  rollout: *b\n"
    [doc] = yaml_fe.parse(text)
    by_key = {e.key: e for e in doc.entries}
    assert by_key["actor_rollout_ref.rollout.dtype"].value_mark == by_key["base.dtype"].value_mark == (1, 9)
    # RLC104 sees the rollout's dtype; its fix edits the one place it is written.
    findings = [f for f in scan_source(text, SM61, path="c.yaml", language="yaml") if f.code == "RLC104"]
    start = text.index("bfloat16")
    assert findings and {(e.start, e.end) for f in findings for e in f.fix.edits} == {(start, start + len("bfloat16"))}


def test_merged_keys_are_not_settings_of_their_own():
    [doc] = yaml_fe.parse("base: &b\n  x: 1\nc:\n  <<: *b\n  y: 2\n")
    assert [e.key for e in doc.entries] == ["base.x", "c.y"]


def test_a_quoted_key_is_spanned_inside_its_quotes():
    text = 'rollout:\n  "dtype": bfloat16\n'
    [doc] = yaml_fe.parse(text)
    setting = yaml_fe._setting(doc.entries[0], text, LineIndex(text))
    assert text[setting.key_span.start:setting.key_span.end] == "dtype"


def test_a_key_with_dots_is_spanned_whole():
    text = "a.b: bfloat16\n"
    [doc] = yaml_fe.parse(text)
    [entry] = doc.entries
    assert yaml_fe._setting(entry, text, LineIndex(text)).key_span.end == 3


@pytest.mark.parametrize("text, line, words", [
    ("a: 1\nb:\n  c: 1\n  c: 2\n", 4, 'duplicate key "c" (first on line 3)'),
    ("a: *nowhere\n", 1, 'undefined alias "nowhere"'),
    ("a: [1, 2\nb: 3\n", 2, ""),
    ("%YAML 1.3\n---\na: b\n", 1, ""),  # ruamel.yaml asserts on this; the error is still a located parse error
])
def test_invalid_yaml_is_a_located_error(text, line, words):
    with pytest.raises(yaml_fe.PARSE_ERRORS) as info:
        yaml_fe.parse(text)
    got_line, column, message = yaml_fe.syntax_error_location(info.value)
    assert got_line == line and column >= 1 and words in message


@needs_libyaml
def test_what_libyaml_rejects_the_yaml_1_2_parser_reads():
    # U+0085 (NEL) ends a line in YAML 1.1 (libyaml) but is an ordinary character in YAML 1.2.
    text = "name: \x85x\nactor_rollout_ref:\n  rollout:\n    dtype: bfloat16\n"
    with pytest.raises(yaml_fe.YamlSyntaxError):
        yaml_fe._read_documents(libyaml(text))
    assert "RLC104" in [f.code for f in scan_source(text, SM61, path="c.yaml", language="yaml")]


def test_without_libyaml_the_yaml_1_2_parser_reads_everything(monkeypatch):
    monkeypatch.setattr(yaml_fe, "_libyaml_events", lambda: None)
    text = "actor_rollout_ref:\n  rollout:\n    dtype: bfloat16 # why\n"
    [finding] = [f for f in scan_source(text, SM61, path="c.yaml", language="yaml") if f.code == "RLC104"]
    assert (finding.location.line, finding.location.column) == (3, 5)


def test_deep_nesting_is_read_iteratively_and_past_the_limit_is_too_deep():
    depth = yaml_fe.MAX_NESTING - 2  # deeper than Python's own recursion limit allows a recursive reader
    text = "".join(f"{'  ' * i}k{i}:\n" for i in range(depth)) + f"{'  ' * depth}dtype: bfloat16\n"
    [doc] = yaml_fe.parse(text)
    assert doc.entries[-1].key.endswith(f"k{depth - 1}.dtype")


def _too_deep_flow(closed: bool) -> str:
    depth = 200_000  # libyaml 0.2.5 alone takes over a minute on this: its time grows with the square of the depth
    return "rollout:\n  dtype: bfloat16\nb: " + "[" * depth + ("]" * depth if closed else "") + "\n"


def _too_deep_block() -> str:
    depth = yaml_fe.MAX_NESTING + 50
    return "".join(f"{' ' * i}k{i}:\n" for i in range(depth)) + f"{' ' * depth}dtype: bfloat16\n"


# A flow level is one event (`[`), a block level two (the key, then the mapping under it).
@pytest.mark.parametrize(("text", "events_per_level"), [(_too_deep_flow(True), 1), (_too_deep_flow(False), 1),
                                                         (_too_deep_block(), 2)], ids=["flow-closed", "flow-open", "block"])
def test_pathological_nesting_stops_at_the_limit(text, events_per_level, tmp_path, monkeypatch):
    read = []

    def counted(events):
        for event in events:
            read.append(event)
            yield event

    # libyaml 0.2.5 (PyYAML <= 6.0.3) runs into MAX_NESTING; libyaml 0.2.6 (PyYAML 6.0.4's wheels) stops at its own
    # limit of 1,000 levels first. Either way the reader reports the same RecursionError.
    source = libyaml or yaml_fe._ruamel_events
    with pytest.raises(RecursionError):
        yaml_fe._read_documents(counted(source(text)))
    # stopped right there, not after the parser went all the way down
    assert len(read) < events_per_level * yaml_fe.MAX_NESTING + 10

    # ...and with libyaml the file is not handed to ruamel.yaml's slow pure-Python parser for a second opinion.
    second_opinions = []
    ruamel_events = yaml_fe._ruamel_events
    monkeypatch.setattr(yaml_fe, "_ruamel_events", lambda t: second_opinions.append(t) or ruamel_events(t))
    (tmp_path / "deep.yaml").write_text(text)
    result = Checker(SM61, Options()).check_file(str(tmp_path / "deep.yaml"), "yaml")
    assert result.error.one_line().startswith(f"{tmp_path / 'deep.yaml'}: is nested too deeply to parse")
    assert not second_opinions or libyaml is None
