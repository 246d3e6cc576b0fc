"""rlcompat/server/analysis.py: an editor buffer checked as `scan` checks the file named so (no pygls needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.server.analysis import EditorSettings, analyse, language_for

BF16 = "import torch\ny = t.to(torch.bfloat16)\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\ntarget = "sm61"\nextend-exclude = ["vendored"]\n')
    return tmp_path


def _spans(path: Path, text: str, editor: EditorSettings = EditorSettings()) -> list[tuple[str, str]]:
    found = analyse(str(path), text, language_for(str(path)), editor)
    return [(f.code, text[slice(*found.span(f))]) for f in found.findings]


def test_a_coding_cookie_does_not_re_decode_the_buffer(project):
    # The editor already decoded the file; reading its text as Latin-1 bytes again would shift every column.
    text = "# -*- coding: latin-1 -*-\nimport torch\ny = 'é€'; z = t.to(torch.bfloat16)\n"
    assert _spans(project / "m.py", text) == [("RLC101", "torch.bfloat16")]


def test_a_byte_order_mark_in_the_buffer_keeps_spans_and_edits_in_place(project):
    text = "\ufeff" + BF16
    found = analyse(str(project / "m.py"), text, "python", EditorSettings())
    (finding,) = found.findings
    assert text[slice(*found.span(finding))] == "torch.bfloat16"
    assert [text[e.start:e.end] for e in found.edits(finding)] == ["bfloat16"]
    fix = found.fix_all()
    assert text[:fix.start] + fix.content + text[fix.end:] == "\ufeff" + BF16.replace("bfloat16", "float32")


def test_markdown_and_shell_buffers_are_checked_like_named_files(project):
    md = "# Run\n\n```bash\npython train.py actor.dtype=bfloat16\n```\n"
    assert ("RLC003", "actor.dtype") in _spans(project / "README.md", md)
    assert language_for(str(project / "Untitled-1"), "shellscript") == "shell"
    assert language_for(str(project / "notes.txt"), "plaintext") is None


def test_excluded_and_tool_files_get_nothing(project):
    assert _spans(project / "vendored" / "m.py", BF16) == []
    assert _spans(project / ".venv" / "lib" / "m.py", BF16) == []
    assert _spans(project / "package.json", '{"dtype": "bfloat16"}') == []
    assert _spans(project / "m.py", BF16) == [("RLC101", "torch.bfloat16")]


def test_the_editor_target_wins_and_a_bad_one_is_a_problem_not_a_crash(project):
    assert _spans(project / "m.py", BF16, EditorSettings(target="sm80")) == []
    found = analyse(str(project / "m.py"), BF16, "python", EditorSettings(target="sm999"))
    assert found.findings == [] and "unknown target 'sm999'" in found.problem
    (project / "pyproject.toml").write_text("[tool.rlcompat]\ntarget = 61\n")
    found = analyse(str(project / "m.py"), BF16, "python", EditorSettings())
    assert "target must be a string" in found.problem


def test_editor_settings_are_read_flat_or_under_rlcompat():
    assert EditorSettings.from_client({"target": "T4", "unsafeFixes": True}) == EditorSettings("T4", True)
    assert EditorSettings.from_client({"rlcompat": {"target": "sm70"}}) == EditorSettings("sm70", None)
    assert EditorSettings.from_client({"target": 61, "unsafeFixes": "yes"}) == EditorSettings()
    assert EditorSettings.from_client(None) == EditorSettings()
