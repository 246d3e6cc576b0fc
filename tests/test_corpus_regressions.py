"""Bugs found by the corpus runs (bench/corpus_run.py): each case is the smallest form of the real file's code,
fixed through the library; the result must compile and a second fix must change nothing."""

from __future__ import annotations

import pytest

from rlcompat.config import Options
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.fixer import fix_source
from rlcompat.pipeline.source import decode
from rlcompat.knowledge.targets import resolve_target


def _fix(text: str, target: str, unsafe: bool = True, path: str = "case.py", language: str = "python") -> str:
    checker = Checker(resolve_target(target), Options(cache_dir=None))
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


class _OneFixChecker:
    """Reports one finding whose fix renames `bf16` to `fp16`, as RLC103 did before the fix above."""

    cache = None

    def check_source(self, source, language):
        from rlcompat.pipeline.runner import FileResult
        from rlcompat.findings import Edit, Finding, Fix, FixSafety, Location

        if "bf16" not in source.text:
            return FileResult(source.path, language)
        at = source.text.index("bf16")
        fix = Fix((Edit(at, at + 4, "fp16"),), FixSafety.SAFE, "use fp16")
        return FileResult(source.path, language, findings=[
            Finding("RLC103", "bf16-flag", "bf16", source.path, Location(1, at + 1, 1, at + 5), "sm70", fix=fix)])


def test_fixer_refuses_a_fix_that_compiles_no_more(tmp_path):
    # LibCST parses `f(fp16=True, fp16=False)`; CPython's compiler rejects it. The fixer checks both.
    from rlcompat.pipeline.fixer import FixBroke, fix_file

    text = "cfg = f(bf16=True, fp16=False)\n"
    with pytest.raises(FixBroke, match="uncompilable .*keyword argument repeated"):
        fix_source(_OneFixChecker(), decode("case.py", text.encode("utf-8"), "python"), "python", unsafe=False)
    path = tmp_path / "case.py"
    path.write_text(text)
    outcome = fix_file(_OneFixChecker(), str(path), "python", unsafe=False, write=True)
    assert outcome.broken and path.read_text() == text  # the file is spared


def test_fixer_still_fixes_a_file_that_never_compiled():
    # `return` outside a function: CPython never compiled it, so only the parse is asked for.
    text = "cfg = f(bf16=True)\nreturn cfg\n"
    out = fix_source(_OneFixChecker(), decode("case.py", text.encode("utf-8"), "python"), "python", unsafe=False)
    assert out.fixed == "cfg = f(fp16=True)\nreturn cfg\n"
