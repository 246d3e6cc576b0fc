"""A big text's CPython tree is read a chunk of top-level statements at a time (rlcompat/lang/pyspeed/chunks.py), and
that changes no result.

Cut wherever a cut is allowed (every chunk as short as it can be), the chunks hold the whole tree's statements, line
for line; the narrowed text, the Python settings and every fixture's findings and fixed text are what they are with
the text parsed whole; a text that does not parse is found not to, in linear time; the fixer's compile check gives
CPython's own complaint. And the point of it all: while a big text is scanned or fixed, CPython never parses or
compiles it whole, and no chunk's tree is alive when the next is parsed.
"""

from __future__ import annotations

import ast
import builtins
import gc
import os
from pathlib import Path

import pytest

from rlcompat.config import Options
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.fixer import fix_source
from rlcompat.lang import pysettings
from rlcompat.lang.pyspeed import chunks, narrow as narrowing
from rlcompat.pipeline.source import decode
from rlcompat.knowledge.targets import resolve_target
from tests.test_narrowing_safety import PYTHON_RULES
from tests.test_plain_libcst import _assert_same, _both_ways, _fixture_files

REPO = Path(__file__).resolve().parent.parent
SETTINGS_TRIGGERS = ("bf16", "bfloat16", "flash_attn", "flash_attention", "FLASH_ATTN", "fp8", "packing", "vllm", "dtype")


@pytest.fixture
def smallest_chunks(monkeypatch):
    """A chunk ends wherever one may, however short the text."""
    monkeypatch.setattr(chunks, "CHUNK_CHARS", 1)
    monkeypatch.setattr(chunks, "WHOLE_MAX_CHARS", 1)


# Lines at column 0 that are no statement of their own: inside strings, brackets, a decorated definition, the
# clauses of a compound statement, after a backslash; and line ends CPython counts (\r\n, \r) or does not (\f).
TRICKY = (
    '"""A docstring.\n'
    'x = 1\n'
    'def not_code():\n'
    '"""\n'
    "import torch\n"
    "table = [\n"
    "torch.bfloat16,\n"
    "    1]\n"
    "@decorated\n"
    "@twice(\n"
    "x)\n"
    "def f(dtype=torch.bfloat16):\n"
    "    return dtype\n"
    "if f:\n"
    "    a = 1\n"
    "elif table:\n"
    "    a = 2\n"
    "else:\n"
    "    a = 3\n"
    "try:\n"
    "    b = 1\n"
    "except ValueError:\n"
    "    b = 2\n"
    "finally:\n"
    "    c = 3\n"
    "total = 1 + \\\n"
    "a\r\n"
    "s = '''\r"
    "y = torch.bfloat16\r"
    "'''\r\n"
    "\x0cclass C:\n"
    "    bf16: bool = True\n"
    "async def g():\n"
    "    await f()\n"
    "match a:\n"
    "    case 1:\n"
    "        pass\n"
    "last = torch.bfloat16"
)


def _statements(text: str) -> list[str]:
    """Each top-level statement of `text` as CPython's tree of its chunk has it, numbered as lines of the text."""
    out = []
    for chunk in chunks.chunks(text):
        ast.increment_lineno(chunk.tree, chunk.first)
        out.extend(ast.dump(s, include_attributes=True) for s in chunk.tree.body)
    return out


def _whole(text: str) -> list[str]:
    return [ast.dump(s, include_attributes=True) for s in ast.parse(text).body]


def test_chunks_hold_the_whole_trees_statements(smallest_chunks):
    cuts = []
    for chunk in chunks.chunks(TRICKY):
        cuts.append(chunk.first)
    assert len(cuts) > 5  # it was cut
    assert _statements(TRICKY) == _whole(TRICKY)
    assert chunks.spans_of(TRICKY) == chunks.statement_spans(ast.parse(TRICKY))


def _python_texts(*roots: Path) -> list[tuple[str, str]]:
    texts = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            try:
                texts.append((str(path), path.read_text("utf-8")))
            except (UnicodeDecodeError, OSError):
                continue
    return texts


def _verl_root() -> Path:
    try:
        import verl  # noqa: F401  (only to find the installed package; nothing of it runs)
    except ImportError:
        pytest.skip("verl is not installed (bash scripts/setup.sh)")
    return Path(os.path.dirname(verl.__file__))


def _chunked_and_whole(text: str, rules: list, monkeypatch) -> tuple[tuple, tuple]:
    """(statements, narrowed text, settings, settings read by the narrowing's pass) in the smallest chunks, and whole."""
    def outcome() -> tuple:
        try:
            statements = _statements(text)
        except chunks.NotParsed:
            statements = None
        narrowed = narrowing.narrow(text, rules)
        settings = pysettings.settings_of(text, SETTINGS_TRIGGERS)
        reading = pysettings.SettingsReading(text, SETTINGS_TRIGGERS)
        learnt: list = []
        narrowing.narrow(text, rules, [reading], learnt.append)
        seen = learnt[-1] if learnt else None
        passed = seen.extra.get(("settings", frozenset(SETTINGS_TRIGGERS))) if seen is not None else None
        return statements, narrowed, settings, passed if passed is not None and reading.present else settings

    whole = outcome()
    with monkeypatch.context() as m:
        m.setattr(chunks, "CHUNK_CHARS", 1)
        m.setattr(chunks, "WHOLE_MAX_CHARS", 1)
        in_chunks = outcome()
    return in_chunks, whole


@pytest.mark.slow
def test_fixtures_and_verl_read_in_the_smallest_chunks_give_what_the_whole_tree_gives(monkeypatch):
    target = resolve_target("sm61")
    rules = [cls(target) for cls in PYTHON_RULES if cls.applies_to(target)]
    texts = _python_texts(REPO / "fixtures", _verl_root())
    assert len(texts) > 300
    for path, text in texts:
        in_chunks, whole = _chunked_and_whole(text, rules, monkeypatch)
        for what, a, b in zip(("statements", "narrowed text", "settings", "settings of the narrowing's pass"),
                              in_chunks, whole):
            assert a == b, f"{path}: {what} differ in chunks"


def test_the_tricky_text_narrowed_and_its_settings_are_the_same_in_chunks(monkeypatch):
    target = resolve_target("sm61")
    rules = [cls(target) for cls in PYTHON_RULES if cls.applies_to(target)]
    in_chunks, whole = _chunked_and_whole(TRICKY, rules, monkeypatch)
    assert whole[1] is not None and whole[2]  # something narrowed, some settings (`bf16: bool = True`)
    assert in_chunks == whole


@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_fixtures_in_the_smallest_chunks_give_what_plain_libcst_gives(target, smallest_chunks, monkeypatch):
    files = _fixture_files()
    fast, plain = _both_ways(files, target, monkeypatch)
    assert sum(len(o[2]) for o in fast if len(o) > 2) > 0
    _assert_same(fast, plain)


def test_a_text_that_does_not_parse_is_found_out_in_linear_time(smallest_chunks, monkeypatch):
    # Every line of the long string starts like a statement: each try to end a chunk inside it fails, and the
    # chunk is tried twice as long, not a line longer.
    text = "s = '''\n" + "".join(f"x_{i} = {i}\n" for i in range(2000)) + "'''\nbroken = (\n"
    parsed: list[int] = []
    real = chunks.parse

    def counting(part: str):
        parsed.append(len(part))
        return real(part)

    monkeypatch.setattr(chunks, "parse", counting)
    with pytest.raises(chunks.NotParsed):
        list(chunks.chunks(text))
    assert sum(parsed) < 4 * len(text)
    assert chunks.spans_of(text) is None
    assert narrowing.narrow(text, [_Bf16Rule()]) is None
    assert pysettings.settings_of(text + "bf16 = True\n", ("bf16",)) == []


class _Bf16Rule:
    triggers = ("bfloat16",)


FILLER = "".join(f"x_{i} = t.to(torch.bfloat16)\n" for i in range(50))


@pytest.mark.parametrize("text", [
    pytest.param("import torch\n" + FILLER + "f(fp16=True, fp16=False)\n" + FILLER, id="repeated keyword"),
    # Whether an annotation may hold `yield` depends on a __future__ import in the first chunk.
    pytest.param("from __future__ import annotations\n" + FILLER + "x: (yield) = 1\n", id="future of the first chunk"),
    pytest.param(FILLER + "x: (yield) = 1\n", id="no future"),
    # A module-level `global` after a use of its name: the whole module decides.
    pytest.param("y = 1\n" + FILLER + "global y\n", id="global after use"),
    pytest.param("s = '''\n" + FILLER + "'''\n" + FILLER + "f(a=1, a=2)\n", id="error after a long string"),
    pytest.param("import torch\n" + FILLER, id="compiles"),
])
def test_the_compile_check_in_chunks_says_what_cpython_says_of_the_whole_text(text, smallest_chunks):
    assert chunks.compile_error(text) == chunks._compile(text, 0, 0)[0]  # the whole text in one compile


BIG = "import torch\n" + "".join(f"x_{i} = t.to(torch.bfloat16)\n" for i in range(3500))  # 105 KB


def test_a_big_text_is_never_parsed_or_compiled_whole_by_cpython_and_one_chunks_tree_is_alive_at_a_time(monkeypatch, tmp_path):
    assert len(BIG) > chunks.WHOLE_MAX_CHARS + chunks.CHUNK_CHARS
    real_parse, real_chunk_parse, real_compile = ast.parse, chunks.parse, builtins.compile
    parsed: list[int] = []
    alive_at_each_chunk: list[int] = []

    def parse(source, *args, **kwargs):
        parsed.append(len(source))
        return real_parse(source, *args, **kwargs)

    def parse_chunk(source):
        gc.collect()
        alive_at_each_chunk.append(sum(1 for o in gc.get_objects() if type(o) is ast.Module))
        return real_chunk_parse(source)

    compiled: list[int] = []

    def compile_(source, *args, **kwargs):
        if isinstance(source, str):
            compiled.append(len(source))
        return real_compile(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", parse)
    monkeypatch.setattr(chunks, "parse", parse_chunk)
    monkeypatch.setattr(chunks, "compile", compile_, raising=False)  # what the fixer's check calls
    checker = Checker(resolve_target("sm61"), Options())
    source = decode("big.py", BIG.encode(), "python")
    assert len(checker.check_source(source, "python").findings) == 3500
    fixed = fix_source(checker, source, "python", unsafe=False)
    assert len(fixed.applied) == 3500 and "bfloat16" not in fixed.fixed
    assert parsed and max(parsed) < len(BIG) / 2
    assert compiled and max(compiled) < len(BIG) / 2
    # No chunk's tree is alive when the next is parsed.
    assert len(alive_at_each_chunk) > 5 and set(alive_at_each_chunk) == {0}


def test_a_fixed_text_that_cpython_does_not_compile_is_proved_valid_by_libcst_a_part_at_a_time(monkeypatch):
    from rlcompat.lang import python as py

    text = BIG + "def f(a, a):\n    pass\n"  # parses, does not compile: the fixer asks LibCST whether a fix broke it
    real = py.parse_module
    parsed: list[int] = []

    def parse_module(part: str):
        parsed.append(len(part))
        return real(part)

    monkeypatch.setattr(py, "parse_module", parse_module)
    checker = Checker(resolve_target("sm61"), Options())
    fixed = fix_source(checker, decode("big.py", text.encode(), "python"), "python", unsafe=False)
    assert len(fixed.applied) == 3500 and fixed.fixed.endswith("def f(a, a):\n    pass\n")
    assert max(parsed) < len(text) / 2
    # A part LibCST rejects: the whole text decides, and places the error.
    parsed.clear()

    def rejecting(part: str):
        parsed.append(len(part))
        return real("(" if "\nx_3000 " in part and len(part) < len(text) else part)

    monkeypatch.setattr(py, "parse_module", rejecting)
    with pytest.raises(py.PythonSyntaxError):
        py.validate(text.replace("x_3000 = ", "x_3000 = (", 1))  # CPython no longer parses it: whole at once
    py.validate(text)  # the part holding x_3000 is rejected, the whole text is not
    assert len(text) in parsed
