"""Reports are written in pieces as they are built (report.render_pieces), and the pieces make the same text as the
whole document: the JSON of a list dumped an item at a time is `json.dumps` of the document, and the CLI writes
exactly what `render` returns."""

from __future__ import annotations

import io
import json

import pytest

from rlcompat.cli.common import emit_pieces
from rlcompat.findings import Edit, FileError, Finding, Fix, FixSafety, Location
from rlcompat.report import Summary, render, render_pieces
from rlcompat.report.json_format import Streamed, dumps_pieces, finding_dict
from rlcompat.knowledge.targets import resolve_target

ITEMS = [{"a": 1, "b": [1, {"c": "ü"}], "d": {}, "e": [], "f": None}, {"g": "x\ny\"z"}, {}]


@pytest.mark.parametrize("items", [[], ITEMS[:1], ITEMS], ids=["none", "one", "several"])
@pytest.mark.parametrize("nest", [lambda x: {"k": x, "after": [1]}, lambda x: {"runs": [{"tool": 1, "results": x}]}],
                         ids=["at the top", "nested"])
def test_a_list_built_as_it_is_written_gives_json_dumps_of_the_document(items, nest):
    expected = json.dumps(nest(items), indent=2, ensure_ascii=False) + "\n"
    built: list[int] = []

    def each():
        for i, item in enumerate(items):
            built.append(i)
            yield item

    assert "".join(dumps_pieces(nest(Streamed(each, len(items))))) == expected
    assert built == list(range(len(items)))  # each item built once, as it is written


def _summary(findings: list[Finding]) -> Summary:
    return Summary("scan", resolve_target("sm61"), findings, [FileError("b.py", "cannot be parsed", 1, 2)], 2,
                   knowledge=["verl 0.9.1"])


FINDINGS = [Finding("RLC101", "torch-bfloat16-dtype", "torch.bfloat16 selected: é", "a.py", Location(2, 12, 2, 26), "sm61",
                    fix=Fix((Edit(30, 38, "float32"),), FixSafety.SAFE, "use torch.float32"), source_line="x = t.to(torch.bfloat16)"),
            Finding("RLC102", "autocast-bf16", "autocast", "a.py", Location(3, 1, 4, 2), "sm61", severity="warning")]


@pytest.mark.parametrize("findings", [[], FINDINGS], ids=["no findings", "findings"])
def test_the_json_report_in_pieces_is_the_whole_document(findings):
    text = render("json", _summary(findings))
    doc = json.loads(text)
    assert doc["findings"] == [finding_dict(f) for f in findings]
    assert text == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"  # the whole document, dumped at once


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_the_cli_writes_what_render_returns(fmt, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    summary = _summary(FINDINGS * 700)  # more pieces than one write takes
    emit_pieces(render_pieces(fmt, summary))
    assert out.getvalue() == render(fmt, summary) and out.getvalue().count("RLC101") >= 700


def test_writing_a_long_list_leaves_nothing_for_the_cyclic_collector():
    # A CLI run has the cyclic collector off (pyspeed/collector.py): `json.dumps` of each item alone left the
    # encoder's functions of every call behind, in reference cycles (250 MB for 100,000 findings).
    import gc

    doc = {"findings": Streamed(lambda: ({"code": "RLC101", "line": i} for i in range(2000)), 2000)}
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        for _ in dumps_pieces(doc):
            pass
        left = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert left < 100
