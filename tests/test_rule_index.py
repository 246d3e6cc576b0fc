"""rules/index.py says what each rule declares (languages, triggers), so that a run imports only the rules a file can
wake (rlcompat/pipeline/catalog.py): it must be current, a file must load exactly the rules its words wake, and the
findings and fixes must be those of the whole catalog loaded for every file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlcompat.pipeline import catalog, runner
from rlcompat.rules import file_rules
from rlcompat.rules.codes import CODES
from tests.test_plain_libcst import _fixture_files, _outcomes

INDEX = Path(__file__).resolve().parents[1] / "rules" / "index.py"


def test_the_index_says_what_the_rules_declare():
    assert INDEX.read_text("utf-8") == catalog.render(file_rules()), (
        "rules/index.py is stale: run `python -m rlcompat.pipeline.catalog` (or `python -m rlcompat.docs docs/rules`)")


def test_a_rule_whose_triggers_are_set_per_instance_is_indexed_without_them():
    # RLC002 watches the other shell rules of its target: only an instance knows its words.
    assert catalog.index()["RLC002"][1] is None
    assert catalog.index()["RLC101"][1] == ("bfloat16",)


_LOADED = """
import json, sys
from rlcompat.config import Options
from rlcompat.knowledge.targets import resolve_target
from rlcompat.pipeline.runner import Checker
from rlcompat.rules.codes import CODES
result = Checker(resolve_target("sm61"), Options()).check_text(sys.argv[1], sys.argv[2], sys.argv[3])
rules = {f"rlcompat.rules.{location}" for location in CODES.values()}
print(json.dumps({"modules": sorted(m for m in sys.modules if m in rules),
                  "codes": sorted({f.code for f in result.findings})}))
"""


def _loaded(path: str, text: str, language: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _LOADED, path, text, language], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _woken(text: str, language: str) -> set[str]:
    """The modules of the rules of `language` the index says `text` can wake (own rules or embedded ones)."""
    codes = runner._codes_by_language()[language]
    return {f"rlcompat.rules.{CODES[c]}" for c in codes
            if (words := catalog.triggers_of(catalog.index()[c], language)) is None or any(w in text for w in words)}


@pytest.mark.parametrize("path, text, language", [
    ("a.py", "import torch\nx = torch.ones(2, dtype=torch.bfloat16)\n", "python"),
    ("b.py", "def add(a, b):\n    return a + b\n", "python"),
    ("c.yaml", "actor_rollout_ref:\n  rollout:\n    dtype: bfloat16\n", "yaml"),
])
def test_a_file_loads_only_the_rules_its_words_wake(path, text, language, tmp_path):
    found = _loaded(str(tmp_path / path), text, language)
    assert set(found["modules"]) == _woken(text, language)
    assert len(found["modules"]) < len(file_rules()) // 2
    if "bfloat16" in text:
        assert found["codes"], "the hazard is still reported"


@pytest.mark.parametrize("target", ("sm61", "sm75"))
def test_findings_and_fixes_are_those_of_the_whole_catalog(target, monkeypatch):
    files = _fixture_files()
    indexed = _outcomes(files, target)
    runner._codes_by_language.cache_clear()
    monkeypatch.setattr(catalog, "index", lambda: {})  # every rule not indexed: loaded for every file, as before
    try:
        whole = _outcomes(files, target)
    finally:
        runner._codes_by_language.cache_clear()
    assert sum(len(o[2]) for o in indexed if len(o) > 2) > 0
    assert indexed == whole
