"""A Python script's inline metadata (`# /// script`, PEP 723) is the environment `uv run` installs before the script
runs: its requirements and uv's `[tool.uv]` indexes are judged and fixed where the block writes them."""

from __future__ import annotations

import pytest

from rlcompat.api import fix_text, scan_source
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang import inline_script

SCRIPT = ('#!/usr/bin/env python\n# /// script\n# requires-python = ">=3.10"\n# dependencies = [\n#     "torch==2.8.0",\n'
          '#     "flash-attn",\n# ]\n# ///\nimport torch\n')
ROUTED = ('# /// script\n# dependencies = ["torch==2.7.1", "numpy"]\n#\n# [[tool.uv.index]]\n# name = "gpu"\n'
          '# url = "https://download.pytorch.org/whl/cu128"\n# explicit = true\n#\n# [tool.uv.sources]\n'
          '# torch = { index = "gpu" }\n# ///\nimport torch\n')


def _found(text: str, target: str = "sm61", path: str = "train.py"):
    return [(f.code, f.location.line, f.location.column) for f in scan_source(text, resolve_target(target), path, "python")
            if f.code.startswith("RLC6")]


def test_the_block_s_requirements_are_judged_at_their_lines():
    assert _found(SCRIPT) == [("RLC601", 5, 8), ("RLC603", 6, 8)]  # PyPI's torch 2.8.0 is a cu128 build
    assert _found(SCRIPT, "sm75") == [("RLC603", 6, 8)]
    assert _found(SCRIPT, "sm80") == []


@pytest.mark.parametrize("text", [
    SCRIPT.replace("/// script", "/// pyproject"),  # another type of block installs nothing
    SCRIPT + "# /// script\n# dependencies = []\n# ///\n",  # two script blocks: the launcher refuses the script
    SCRIPT.replace('#     "flash-attn",', '#     "flash-attn",, ='),  # not TOML: the launcher stops first
    SCRIPT.replace("# ]\n# ///", "# ]\n"),  # never closed: no block
    SCRIPT.replace('#     "flash-attn",', '#"flash-attn",'),  # a line that is no content line ends no block
])
def test_what_is_no_script_metadata_is_not_read(text):
    assert [c for c, *_ in _found(text)] == []


def test_a_uv_index_in_the_block_is_fixed_where_it_is_written():
    assert _found(ROUTED) == [("RLC601", 6, 10)]
    fixed = fix_text(ROUTED, resolve_target("sm61"), "train.py", "python").fixed
    assert fixed == ROUTED.replace("cu128", "cu118")  # a CUDA variant of 2.7.1 with Pascal kernels
    assert _found(fixed) == []  # fixed once, nothing left
    assert fix_text(fixed, resolve_target("sm61"), "train.py", "python").fixed == fixed


def test_crlf_lines_and_offsets_are_kept():
    crlf = SCRIPT.replace("\n", "\r\n")
    assert _found(crlf) == [("RLC601", 5, 8), ("RLC603", 6, 8)]
    routed = ROUTED.replace("\n", "\r\n")
    assert fix_text(routed, resolve_target("sm61"), "train.py", "python").fixed == routed.replace("cu128", "cu118")
    start, end = inline_script.script_block(crlf)
    masked = inline_script.toml_text(crlf, start, end)
    assert len(masked) == len(crlf) and masked.count("\n") == crlf.count("\n")
    at = crlf.index('"torch==2.8.0"')
    assert masked[at:at + 14] == crlf[at:at + 14]  # every string where the script writes it
