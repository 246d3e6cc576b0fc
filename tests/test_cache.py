from __future__ import annotations

import json

from rlcompat.api import fix_paths, scan_paths
from rlcompat.config import Options
from rlcompat.knowledge.targets import resolve_target

BAD = "import torch\nx = t.to(torch.bfloat16)\n"


def _scan(tmp_path, target="sm61"):
    settings = Options(root=str(tmp_path))
    return scan_paths([str(tmp_path / "src")], resolve_target(target), settings, jobs=1, use_cache=True)


def _tree(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text(BAD)
    (tmp_path / "src" / "b.py").write_text("y = 2\n")


def test_warm_scan_gives_the_same_findings_without_parsing(tmp_path):
    _tree(tmp_path)
    cold = _scan(tmp_path)
    assert any(r.parsed for r in cold.results)
    warm = _scan(tmp_path)
    assert not any(r.parsed for r in warm.results), "a cached file was parsed again"
    assert warm.findings == cold.findings
    assert (tmp_path / ".rlcompat_cache" / ".gitignore").exists()


def test_an_edited_file_is_checked_again(tmp_path):
    _tree(tmp_path)
    _scan(tmp_path)
    (tmp_path / "src" / "a.py").write_text(BAD + "z = t.to(torch.bfloat16)\n")
    again = _scan(tmp_path)
    assert [f.location.line for f in again.findings] == [2, 3]


def test_another_target_does_not_reuse_results(tmp_path):
    _tree(tmp_path)
    assert len(_scan(tmp_path, "sm61").findings) == 1
    assert len(_scan(tmp_path, "sm90").findings) == 0
    assert len(_scan(tmp_path, "sm61").findings) == 1


def test_a_forged_or_corrupt_cache_cannot_hide_findings(tmp_path):
    _tree(tmp_path)
    _scan(tmp_path)
    [cache_file] = (tmp_path / ".rlcompat_cache").glob("results-*.json")
    doc = json.loads(cache_file.read_text())
    # An entry claiming a.py is clean, but for other bytes than a.py has: must be ignored.
    for path, entry in doc["files"].items():
        entry[1]["findings"] = []
        if path.endswith("a.py"):
            entry[0] = "0" * 64
    cache_file.write_text(json.dumps(doc))
    assert len(_scan(tmp_path).findings) == 1
    cache_file.write_text("{not json")
    assert len(_scan(tmp_path).findings) == 1


def test_fix_skips_files_the_cache_knows_are_clean_and_still_fixes_the_rest(tmp_path):
    _tree(tmp_path)
    _scan(tmp_path)
    report = fix_paths([str(tmp_path / "src")], resolve_target("sm61"), Options(root=str(tmp_path)), jobs=1, use_cache=True)
    assert len(report.applied) == 1 and "torch.float32" in (tmp_path / "src" / "a.py").read_text()
    assert _scan(tmp_path).findings == []


def test_fingerprint_covers_rule_family_folders_and_knowledge_at_any_depth(monkeypatch, tmp_path):
    """A rule edited in rules/<family>/ or a framework file added under rlcompat/knowledge/data/frameworks/<fw>/ invalidates the cache."""
    from importlib import resources

    from rlcompat.pipeline import cache

    rels = {rel for rel, _ in cache._code_files(resources.files("rlcompat.rules"), "")}
    assert "dtype/bf16_flag.py" in rels and "attention/helpers.py" in rels
    own = {rel for rel, _ in cache._code_files(resources.files("rlcompat"), "")}
    assert any(r.startswith("analysis/") for r in own)
    assert any(r.startswith("knowledge/data/frameworks/") and r.count("/") == 4 for r in own)

    (tmp_path / "fam").mkdir()
    rule = tmp_path / "fam" / "a_rule.py"
    rule.write_text("x = 1\n")
    before = dict(cache._code_files(tmp_path, ""))
    stamp = cache._stamp(before["fam/a_rule.py"])
    rule.write_text("x = 22\n")
    assert cache._stamp(rule) != stamp
