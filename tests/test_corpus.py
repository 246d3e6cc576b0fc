"""The corpus run of bench/corpus_run.py over one real package: verl 0.9.1 (the installed one), sm61, unsafe fixes.

Every file is scanned and fixed on a copy; each fixed file must compile, differ from the original only at the
reported fix sites (text and AST), and not change under a second `fix`. No rule may crash. About 20 s on 2 cores.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from tests.bench_module import load_bench

REPO = Path(__file__).resolve().parents[1]


def _corpus_run():
    return load_bench("corpus_run.py")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl is not installed (pip install rlcompat[verify])")
def test_verl_corpus_sm61_fixes_are_local_compiling_and_idempotent(tmp_path):
    corpus = _corpus_run()
    source, version = corpus.package_source("verl")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        run = corpus.run_package("verl", source, version, "sm61", "unsafe", pool, tmp_path)
    assert run.crashes == []
    assert run.problems == []
    assert run.errors == []  # every verl file parses
    assert run.by_language.get("python", 0) > 300 and run.by_language.get("yaml", 0) > 40
    assert run.applied > 0 and run.changed > 0  # the run did rewrite files, so the checks above checked something


def test_corpus_checks_catch_changes_outside_fix_sites():
    """The checks themselves: an edit that was not reported, or that spills over, is caught."""
    from rlcompat.findings import Edit

    corpus = _corpus_run()
    original = "x = f(dtype=torch.bfloat16)\ny = 1\n"
    at = original.index("bfloat16")
    sites = corpus.SiteMap()
    sites.apply([Edit(at, at + len("bfloat16"), "float32")])
    fixed = original.replace("bfloat16", "float32")
    assert corpus.check_python(original, fixed, sites, "x.py") == []
    assert corpus.check_python(original, fixed.replace("y = 1", "y = 2"), sites, "x.py")[0].startswith("nonlocal-ast")
    assert corpus.check_python(original, fixed + "z = 3\n", sites, "x.py")[0].startswith("nonlocal-ast")
    assert corpus.check_python(original, fixed.replace("float32)", "float32"), sites, "x.py")[0].startswith("noncompiling")
    # a second pass's edit maps back through the first one
    call = fixed.index("f(")
    sites.apply([Edit(call, call + 1, "g")])
    assert corpus.check_python(original, fixed.replace("f(", "g("), sites, "x.py") == []

    yaml = "a:\n  dtype: bf16\n  b: 1\n"
    at = yaml.index("bf16")
    sites = corpus.SiteMap()
    sites.apply([Edit(at, at + 4, "fp32")])
    fixed = yaml.replace("bf16", "fp32")
    assert corpus.check_yaml(yaml, fixed, sites) == []
    assert corpus.check_yaml(yaml, fixed.replace("b: 1", "b: 2"), sites) == ["nonlocal-yaml: a.b changed outside every fix site"]
    assert corpus.check_yaml(yaml, fixed + "c: 1\n", sites) == ["nonlocal-yaml: c changed outside every fix site"]
