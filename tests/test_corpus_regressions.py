"""Bugs found by the corpus runs (bench/corpus_run.py): each case is the smallest form of the real file's code,
fixed through the library; the result must compile and a second fix must change nothing."""

from __future__ import annotations

import pytest

from rlcompat.config import Settings
from rlcompat.engine import Checker
from rlcompat.fixer import fix_source
from rlcompat.source import decode
from rlcompat.targets import resolve_target


def _fix(text: str, target: str, unsafe: bool = True, path: str = "case.py", language: str = "python") -> str:
    checker = Checker(resolve_target(target), Settings(cache_dir=None))
    out = fix_source(checker, decode(path, text.encode("utf-8"), language), language, unsafe).fixed
    again = fix_source(checker, decode(path, out.encode("utf-8"), language), language, unsafe)
    assert again.fixed == out and not again.applied, "a second fix changed the file"
    return out


@pytest.mark.parametrize("target", ["sm70", "sm75"])
def test_bf16_flag_next_to_fp16_keyword(target):
    # verl 0.9.1 utils/megatron_utils.py: RLC103 renamed `bf16=True` to `fp16=True` beside `fp16=False`,
    # a repeated keyword argument (SyntaxError).
    src = (
        "def cfg(params_dtype):\n"
        "    return ModelParallelConfig(\n"
        "        params_dtype=params_dtype,\n"
        "        bf16=True,\n"
        "        fp16=False,\n"
        "        timers=None,\n"
        "    )\n"
    )
    out = _fix(src, target)
    compile(out, "case.py", "exec")
    assert "bf16=False" in out and "fp16=True" in out
