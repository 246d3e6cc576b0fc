"""Setting a value to null writes the language's null, never a quoted string spelling it."""

from __future__ import annotations

import pytest

from rlcompat.lang.settings import Setting, Span


def _setting(text: str, value: str, origin: str) -> Setting:
    start = text.index(value)
    return Setting("quantization", value, Span(0, 1), Span(start, start + len(value)), origin=origin)


def _apply(text, edit):
    return text[: edit.start] + edit.content + text[edit.end:]


@pytest.mark.parametrize("text, origin, want", [
    ('quantization: "fp8"\n', "yaml", "quantization: null\n"),
    ("quantization: 'fp8'\n", "yaml", "quantization: null\n"),
    ("quantization: fp8\n", "yaml", "quantization: null\n"),
    ('{"quantization": "fp8"}', "json", '{"quantization": null}'),
    ('run quantization="fp8" x', "hydra-override", "run quantization=null x"),
    ('LLM(quantization="fp8")', "python-keyword", "LLM(quantization=None)"),
])
def test_null_in_each_language(text, origin, want):
    s = _setting(text, "fp8", origin)
    assert _apply(text, s.rewrite_null(text)) == want


def test_computed_value_has_no_edit():
    s = Setting("quantization", None, Span(0, 1), None, origin="yaml")
    assert s.rewrite_null("quantization: ${x}\n") is None
