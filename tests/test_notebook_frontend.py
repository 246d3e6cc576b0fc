"""Jupyter notebooks: code cells as Python, `!`/`%%bash` as shell, locations in the notebook file with the cell
named, fixes inside source strings only."""

from __future__ import annotations

import json

import pytest

from rlcompat.api import fix_paths, scan_paths
from rlcompat.lang import notebook
from rlcompat.knowledge.targets import resolve_target

SM61 = resolve_target("sm61")


def _nb(*cells, indent=1) -> str:
    out = {"cells": [{"cell_type": kind, "metadata": {"tags": ["t"]}, "source": src,
                      **({"execution_count": None, "outputs": [{"output_type": "stream", "name": "stdout",
                                                                "text": ["torch.bfloat16\n"]}]} if kind == "code" else {})}
                     for kind, src in cells],
           "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(out, indent=indent) + "\n"


def test_findings_name_the_file_line_and_the_cell(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text(_nb(("markdown", ["dtype=torch.bfloat16 in prose\n"]),
                        ("code", ["import torch\n"]),
                        ("code", ["y = 1\n", "x = torch.zeros(1, dtype=torch.bfloat16)\n"])))
    (finding,) = scan_paths([str(path)], SM61).findings
    lines = path.read_text().splitlines()
    assert lines[finding.location.line - 1].strip().startswith('"x = torch.zeros')
    assert lines[finding.location.line - 1][finding.location.column - 1:].startswith("torch.bfloat16")
    assert finding.message.endswith("(cell 3, line 2)")  # the import in cell 2 serves cell 3


def test_fix_touches_sources_only_and_keeps_indent_and_crlf(tmp_path):
    text = _nb(("code", ["import torch\n", "!python train.py --bf16 --lr 1\n", "m = torch.bfloat16 # a \"quoted\" note"]),
               ("code", ["%%bash\n", "vllm serve m --dtype bfloat16\n"]), indent=2).replace("\n", "\r\n")
    path = tmp_path / "a.ipynb"
    path.write_bytes(text.encode())
    fix_paths([str(path)], SM61)
    fixed = path.read_bytes().decode()
    assert fixed == (text.replace("torch.bfloat16 #", "torch.float32 #").replace(" --bf16", "")
                     .replace("--dtype bfloat16", "--dtype float32"))
    assert json.loads(fixed)["cells"][0]["outputs"] == json.loads(text)["cells"][0]["outputs"]
    assert not fix_paths([str(path)], SM61).changed_files


def test_a_cell_mid_edit_does_not_hide_the_others(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text(_nb(("code", ["def broken(:\n"]), ("code", ["import torch\n", "x = torch.bfloat16\n"])))
    report = scan_paths([str(path)], SM61)
    assert not report.errors and [f.code for f in report.findings] == ["RLC101"]


def test_a_suppression_in_a_cell_line_silences_it(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text(_nb(("code", ["import torch\n", "x = torch.bfloat16  # rlcompat: ignore[RLC101]\n"])))
    report = scan_paths([str(path)], SM61)
    assert not report.findings and report.suppressed == 1


def test_broken_notebook_json_is_a_located_error(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text('{"cells": [{"source": ["torch.bfloat16"]}\n')
    (error,) = scan_paths([str(path)], SM61).errors
    assert "a.ipynb:2:1:" in error.one_line() and "invalid JSON" in error.one_line()


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402


@given(st.text(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_decoded_sources_keep_every_character_and_its_offset(source, ascii_only):
    token = json.dumps(source, ensure_ascii=ascii_only)
    text = "  " + token
    chars = notebook.decode(text, 2, len(text))
    assert "".join(c for c, _ in chars) == source
    assert all(text[o] == c or text[o] == "\\" for c, o in chars)


def test_writefile_cells_are_read_as_the_file_they_write(tmp_path):
    path = tmp_path / "a.ipynb"
    text = _nb(("code", ["%%writefile config.yaml\n", "base_model: m\n", "bf16: true\n"]),
               ("code", ["%%writefile run.sh\n", "accelerate launch t.py --attn_implementation flash_attention_2\n"]),
               ("code", ["%%writefile notes.txt\n", "bf16: true\n"]))
    path.write_text(text)
    found = sorted((f.code, f.message.rsplit("(", 1)[1]) for f in scan_paths([str(path)], SM61).findings)
    assert found == [("RLC107", "cell 1, line 3)"), ("RLC204", "cell 2, line 2)")]
    fix_paths([str(path)], SM61)
    assert path.read_text() == text.replace('"bf16: true\\n"', '"bf16: false\\n"', 1).replace(
        "flash_attention_2", "sdpa")


def test_writefile_cells_go_to_the_front_end_the_knowledge_hands_over():
    """The notebook front end does not import the engine: the front end of a `%%writefile` cell's language comes with
    the knowledge it is handed."""
    from rlcompat.pipeline.scanned_file import ScannedFile
    from rlcompat.knowledge.identity import pinned
    from rlcompat.rules import file_rules

    asked = []

    class Recording(ScannedFile):
        def front_end(self, language):
            asked.append(language)
            return super().front_end(language)

    text = _nb(("code", ["%%writefile config.yaml\n", "bf16: true\n"]), ("code", ["%%writefile notes.txt\n", "bf16: true\n"]))
    rules = [cls(SM61) for cls in file_rules() if cls.code == "RLC107"]
    findings = notebook.check(notebook.parse(text), text, "a.ipynb", rules, SM61, scanned=Recording("a.ipynb", pinned({"verl": "0.9.1"})))
    assert asked == ["yaml"]
    assert [(f.code, f.location.line) for f in findings] == [("RLC107", text[:text.index("bf16: true")].count("\n") + 1)]
