"""The YAML front end's mappings: where a mapping written as a key's value is (`view.sections`) and an edit adding
a key to it (`view.add`), the same from both event sources; what is added parses and holds the new key."""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from rlcompat.lang import yaml as yaml_fe

HERE = os.path.dirname(__file__)
FIXTURE_CONFIGS = sorted(glob.glob(os.path.join(HERE, "..", "fixtures", "**", "*.y*ml"), recursive=True))


class _NoKnowledge:
    mounts: dict = {}
    config_top_keys: set = set()


def _view(text: str, events):
    (view,) = yaml_fe._views(yaml_fe._read_documents(events(text)), text, "c.yaml", _NoKnowledge())
    return view


def _add(text: str, key: str, events) -> str | None:
    edit = _view(text, events).add(key, "sdpa")
    return None if edit is None else text[:edit.start] + edit.content + text[edit.end:]


libyaml = yaml_fe._libyaml_events()
SOURCES = [pytest.param(yaml_fe._ruamel_events, id="ruamel")] + (
    [pytest.param(libyaml, id="libyaml")] if libyaml is not None else [])

CASES = [
    ("m:\n  override_config: {}\n  x: 1\n", "m.override_config",
     "m:\n  override_config: {attn_implementation: sdpa}\n  x: 1\n"),
    ("override_config: {foo: 1}\n", "override_config", "override_config: {foo: 1, attn_implementation: sdpa}\n"),
    ("override_config: {foo: 1, }\n", "override_config", "override_config: {foo: 1, attn_implementation: sdpa }\n"),
    ("m:\n  override_config:\n    foo: 1\n    bar: [1, 2]  # c\n  z: 3\n", "m.override_config",
     "m:\n  override_config:\n    foo: 1\n    bar: [1, 2]  # c\n    attn_implementation: sdpa\n  z: 3\n"),
    ("m:\n  override_config:\n    bar:\n      - 1\n      - {q: 2}\n# c\nz: 3\n", "m.override_config",
     "m:\n  override_config:\n    bar:\n      - 1\n      - {q: 2}\n    attn_implementation: sdpa\n# c\nz: 3\n"),
    ("m:\r\n  override_config:\r\n    foo: |\r\n      text\r\n\r\nz: 3\r\n", "m.override_config",
     # after the blank line: a literal block's trailing lines are its own (`|+` keeps them)
     "m:\r\n  override_config:\r\n    foo: |\r\n      text\r\n\r\n    attn_implementation: sdpa\r\nz: 3\r\n"),
    ("override_config:\n  foo:", "override_config", "override_config:\n  foo:\n  attn_implementation: sdpa"),
]


@pytest.mark.parametrize("events", SOURCES)
@pytest.mark.parametrize(("text", "mapping", "expected"), CASES)
def test_a_key_is_added_to_the_mapping_where_it_is_written(text, mapping, expected, events):
    assert _add(text, mapping + ".attn_implementation", events) == expected
    loaded = yaml.safe_load(expected)
    for part in mapping.split("."):
        loaded = loaded[part]
    assert loaded["attn_implementation"] == "sdpa"


@pytest.mark.parametrize("events", SOURCES)
def test_sections_name_every_mapping_value_at_its_key(events):
    text = "a:\n  b: {}\n  c:\n    d: 1\nlist:\n  - e: {}\n\"q\": {x: 1}\n"
    view = _view(text, events)
    assert {key: text[span.start:span.end] for key, span in view.sections.items()} == {
        "": "a", "a": "a", "a.b": "b", "a.c": "c", "q": "q"}  # a mapping inside a list is not a setting's place
    assert view.add("list.e.k", "v") is None  # the list gives `list` a value of its own
    # a key no mapping of the file carries: its mappings are added at the end of the root mapping
    edit = view.add("nowhere.k", "v")
    assert text[:edit.start] + edit.content + text[edit.end:] == text + "nowhere:\n  k: v\n"


@pytest.mark.parametrize("events", SOURCES)
def test_root_mapping_of_a_flow_document_takes_no_key(events):
    assert _view("{a: 1}\n", events).add("b.c", "v") is None
    assert "" not in _view("{a: 1}\n", events).sections


@pytest.mark.skipif(libyaml is None, reason="PyYAML without libyaml")
@pytest.mark.parametrize("path", FIXTURE_CONFIGS)
def test_both_event_sources_give_the_same_mappings(path):
    text = open(path, encoding="utf-8").read()
    assert ([d.sections for d in yaml_fe._read_documents(libyaml(text))]
            == [d.sections for d in yaml_fe._read_documents(yaml_fe._ruamel_events(text))])
