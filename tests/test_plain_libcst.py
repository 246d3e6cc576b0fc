"""The speed machinery (rlcompat/lang/pyspeed/) never changes a result: with `RLCOMPAT_PLAIN_LIBCST=1` every file is
parsed whole by plain LibCST and located by its PositionProvider, and findings and fixed text must be byte-identical
to the fast path's, on every fixture, on a sample of the installed verl 0.9.1 package and on subsets of torch and
transformers (bench/plain_parity.py compares every file of the three)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlcompat.config import Options
from rlcompat.pipeline.discovery import discover
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.fixer import FixBroke, fix_source
from rlcompat.lang import pyspeed
from rlcompat.pipeline.source import SourceError, decode, read_bytes
from rlcompat.knowledge.targets import resolve_target

REPO = Path(__file__).resolve().parent.parent
TARGETS = ("sm61", "sm75")


def _outcomes(files: list[tuple[str, str]], target: str) -> list:
    """Per file: its error, its findings as reported, and its fixed text (unsafe fixes included)."""
    checker = Checker(resolve_target(target), Options())
    out = []
    for path, language in files:
        try:
            source = decode(path, read_bytes(path), language)
        except SourceError as exc:
            out.append((path, str(exc)))
            continue
        result = checker.check_source(source, language)
        try:
            fixed = fix_source(checker, source, language, unsafe=True).fixed
        except FixBroke as exc:
            fixed = f"FixBroke: {exc}"
        out.append((path, result.error, [(f.code, f.location, f.message, f.severity, f.fix, f.source_line)
                                         for f in result.findings], result.suppressed, fixed))
    return out


def _both_ways(files, target, monkeypatch) -> tuple[list, list]:
    monkeypatch.delenv(pyspeed.PLAIN_ENV, raising=False)
    fast = _outcomes(files, target)
    monkeypatch.setenv(pyspeed.PLAIN_ENV, "1")
    assert pyspeed.plain()
    plain = _outcomes(files, target)
    return fast, plain


def _assert_same(fast: list, plain: list) -> None:
    assert [o[0] for o in fast] == [o[0] for o in plain]
    for a, b in zip(fast, plain):
        assert a == b, f"{a[0]}: the fast path and plain LibCST differ"


def _fixture_files() -> list[tuple[str, str]]:
    files, _ = discover([str(REPO / "fixtures")], Options(root=str(REPO)))
    return files


@pytest.mark.parametrize("target", TARGETS)
def test_fixtures_give_the_same_findings_and_fixes_with_plain_libcst(target, monkeypatch):
    files = _fixture_files()
    assert any(lang == "python" for _, lang in files)
    fast, plain = _both_ways(files, target, monkeypatch)
    assert sum(len(o[2]) for o in fast if len(o) > 2) > 0
    _assert_same(fast, plain)


def _verl_sample() -> list[tuple[str, str]]:
    try:
        import verl  # noqa: F401  (only to find the installed package; nothing of it runs)
    except ImportError:
        pytest.skip("verl is not installed (bash scripts/setup.sh)")
    root = Path(os.path.dirname(verl.__file__))
    python = sorted(str(p) for p in root.rglob("*.py"))
    # Every file that names a dtype, attention or Triton (where the machinery is at work), and every fourth other.
    hot = ("bfloat16", "bf16", "flash", "triton", "compile", "fp16")
    sample = [p for i, p in enumerate(python) if i % 4 == 0 or any(w in Path(p).read_text("utf-8", "replace") for w in hot)]
    return [(p, "python") for p in sample]


@pytest.mark.slow
def test_a_sample_of_verl_gives_the_same_findings_and_fixes_with_plain_libcst(monkeypatch):
    files = _verl_sample()
    fast, plain = _both_ways(files, "sm61", monkeypatch)
    assert sum(len(o[2]) for o in fast if len(o) > 2) > 0
    _assert_same(fast, plain)


def _package_files(name: str, parts: tuple[str, ...]) -> list[tuple[str, str]]:
    import importlib.util

    spec = importlib.util.find_spec(name)  # the installed package's files; nothing of it is imported or run
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{name} is not installed (bash scripts/setup.sh)")
    root = Path(list(spec.submodule_search_locations)[0])
    paths = sorted(p for part in parts for p in ((root / part).rglob("*.py") if (root / part).is_dir() else [root / part]))
    return [(str(p), "python") for p in paths if p.exists()]


@pytest.mark.slow
@pytest.mark.parametrize("package,parts,some_in_parts", [
    # big modules parsed in parts (lang/pyspeed/batches.py), dtype tables narrowed inside statements, FSDP and amp
    ("torch", ("overrides.py", "sparse/_triton_ops.py", "_dynamo/guards.py", "testing/_internal/opinfo",
               "distributed/fsdp", "amp"), True),
    # narrowed, no module of these is big enough to be parsed in parts: this one holds the narrowing to plain LibCST
    ("transformers", ("modeling_utils.py", "training_args.py", "models/llama", "integrations"), False),
])
def test_torch_and_transformers_give_the_same_findings_and_fixes_with_plain_libcst(package, parts, some_in_parts,
                                                                                    monkeypatch):
    from rlcompat.lang.pyspeed import batches

    files = _package_files(package, parts)
    split = batches.split
    in_parts: list[bool] = []

    def counted(text, tree_of, planned=None):
        parts = split(text, tree_of, planned)
        in_parts.append(parts is not None)
        return parts

    monkeypatch.setattr(batches, "split", counted)
    fast, plain = _both_ways(files, "sm61", monkeypatch)
    assert len(files) > 10 and sum(len(o[2]) for o in fast if len(o) > 2) > 0
    assert any(in_parts) is some_in_parts
    _assert_same(fast, plain)


def test_the_switch_turns_every_trick_off(monkeypatch):
    from rlcompat.lang.pyspeed.narrow import narrow

    class _Rule:
        triggers = ("bfloat16",)

    text = "import torch\ndef a():\n    return 1\nx = torch.bfloat16\n"
    monkeypatch.delenv(pyspeed.PLAIN_ENV, raising=False)
    assert narrow(text, [_Rule()]) is not None
    monkeypatch.setenv(pyspeed.PLAIN_ENV, "1")
    assert narrow(text, [_Rule()]) is None
    monkeypatch.setenv(pyspeed.PLAIN_ENV, "0")
    assert not pyspeed.plain()
