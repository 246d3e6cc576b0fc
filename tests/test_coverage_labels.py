"""The coverage label files (bench/coverage/labels/*.toml) follow their schema. Nothing is downloaded."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.bench_module import load_bench

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
LABELS = REPO / "bench" / "coverage" / "labels"
LABEL_FILES = sorted(LABELS.glob("*.toml"))


def _bench_module():
    return load_bench("coverage.py", "coverage_bench")


BENCH = _bench_module()
CORPUS_KEYS = {"name", "source", "sha256", "include", "split", "frameworks"}
HAZARD_KEYS = {"file", "line", "kind", "targets", "fact", "text"}
CLEAN_KEYS = {"file", "line", "why"}


def test_there_are_label_files():
    assert len(LABEL_FILES) >= 5


@pytest.mark.parametrize("path", LABEL_FILES, ids=lambda p: p.stem)
def test_label_file_schema(path: Path):
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert set(data) <= {"corpus", "hazard", "clean"}, f"{path.name}: unknown tables {set(data)}"
    head = data["corpus"]
    assert CORPUS_KEYS <= set(head) <= CORPUS_KEYS | {"exclude", "checkout"}, f"{path.name}: [corpus] keys {set(head)}"
    # a whole checkout is read from a git mirror only (a PyPI archive is unpacked whole anyway)
    assert head.get("checkout", False) in (False, True) and (not head.get("checkout") or head["source"].startswith("git:"))
    assert head["name"] == path.stem, f"{path.name}: name {head['name']!r} differs from the file name"
    assert BENCH.SOURCE_RE.match(head["source"]), f"{path.name}: source {head['source']!r}"
    assert re.fullmatch(r"[0-9a-f]{64}", head["sha256"]), f"{path.name}: sha256 must be 64 hex digits"
    assert head["split"] in BENCH.SPLITS
    assert head["include"] and all(isinstance(g, str) and g for g in head["include"])
    assert all(isinstance(g, str) and g for g in head.get("exclude", []))

    seen: set[tuple[str, int]] = set()
    for hazard in data.get("hazard", []):
        where = f"{path.name}: hazard {hazard.get('file')}:{hazard.get('line')}"
        assert HAZARD_KEYS <= set(hazard) <= HAZARD_KEYS | {"end_line"}, f"{where}: keys {set(hazard)}"
        assert hazard["kind"] in BENCH.KINDS, f"{where}: kind {hazard['kind']!r} not in the vocabulary"
        assert hazard["targets"] and set(hazard["targets"]) <= set(BENCH.TARGETS), f"{where}: targets"
        assert len(set(hazard["targets"])) == len(hazard["targets"]), f"{where}: repeated target"
        assert isinstance(hazard["line"], int) and hazard["line"] > 0, f"{where}: line must be positive"
        if "end_line" in hazard:
            assert isinstance(hazard["end_line"], int) and hazard["end_line"] > hazard["line"], f"{where}: end_line"
        assert hazard["fact"].strip() and hazard["text"].strip(), f"{where}: empty fact or text"
        key = (hazard["file"], hazard["line"])
        assert key not in seen, f"{where}: labeled twice"
        seen.add(key)
    for clean in data.get("clean", []):
        where = f"{path.name}: clean {clean.get('file')}:{clean.get('line')}"
        # a clean command continued over lines is judged over its span, as a hazard's is (`end_line`)
        assert CLEAN_KEYS <= set(clean) <= CLEAN_KEYS | {"text", "end_line"}, f"{where}: keys {set(clean)}"
        assert isinstance(clean["line"], int) and clean["line"] > 0, f"{where}: line must be positive"
        if "end_line" in clean:
            assert isinstance(clean["end_line"], int) and clean["end_line"] > clean["line"], f"{where}: end_line"
        assert clean["why"].strip(), f"{where}: empty why"
        key = (clean["file"], clean["line"])
        assert key not in seen, f"{where}: labeled twice"
        seen.add(key)
    for entry in data.get("hazard", []) + data.get("clean", []):
        assert not entry["file"].startswith("/") and ".." not in entry["file"].split("/")


def test_both_splits_are_used():
    splits = {tomllib.loads(p.read_text(encoding="utf-8"))["corpus"]["split"] for p in LABEL_FILES}
    assert splits == set(BENCH.SPLITS)


def test_kind_of_rule_codes():
    assert BENCH.kind_of("RLC101") == "bf16"
    assert BENCH.kind_of("RLC203") == "flash-attn-import"
    assert BENCH.kind_of("RLC201") == "fa2"
    assert BENCH.kind_of("RLC354") == "liger"
    assert BENCH.kind_of("RLC304") == "compile"
    assert BENCH.kind_of("RLC401") == "rollout-engine"
    assert BENCH.kind_of("RLC403") == "fp8"
    assert BENCH.kind_of("XYZ999") == "other"


def _corpus(hazards, clean):
    return BENCH.Corpus(
        name="c", source="pypi-sdist:x==1", sha256="0" * 64, include=["*"], exclude=[], split="dev",
        frameworks=[], hazards=hazards, clean=clean, path=Path("c.toml"),
    )


def test_evaluate_counts_hits_misses_and_false_positives():
    corpus = _corpus(
        hazards=[
            {"file": "a.yaml", "line": 3, "kind": "bf16", "targets": ["sm61", "sm75"], "fact": "f", "text": "t"},
            {"file": "a.yaml", "line": 9, "kind": "compile", "targets": ["sm61"], "fact": "f", "text": "t"},
            {"file": "b.json", "line": 5, "end_line": 6, "kind": "bf16", "targets": ["sm61"], "fact": "f", "text": "t"},
        ],
        clean=[{"file": "a.yaml", "line": 4, "why": "comment"}],
    )
    findings = [
        BENCH.Finding("RLC107", "a.yaml", 3, 3, "m"),  # hit
        BENCH.Finding("RLC107", "a.yaml", 4, 4, "m"),  # judged clean: false positive
        BENCH.Finding("RLC304", "a.yaml", 9, 9, "m"),  # hit on sm61, false positive on sm75
        BENCH.Finding("RLC107", "b.json", 6, 6, "m"),  # inside the hazard's span
        BENCH.Finding("RLC107", "a.yaml", 20, 20, "m"),  # nobody judged line 20
    ]
    on61 = BENCH.evaluate(corpus, "sm61", findings)
    assert (len(on61.hazards), len(on61.hit), len(on61.missed)) == (3, 3, 0)
    assert len(on61.true_positives) == 3 and len(on61.false_positives) == 1 and len(on61.unadjudicated) == 1
    assert on61.recall == 1.0 and on61.precision == 0.75

    on75 = BENCH.evaluate(corpus, "sm75", findings)
    assert (len(on75.hazards), len(on75.hit)) == (1, 1)
    assert len(on75.false_positives) == 3  # clean line, the sm61-only compile, the sm61-only JSON block
    assert on75.precision == 0.25

    nothing = BENCH.evaluate(corpus, "sm61", [])
    assert nothing.recall == 0.0 and nothing.precision is None and len(nothing.missed) == 3


def test_multiline_finding_covers_hazard_line():
    corpus = _corpus(
        hazards=[{"file": "t.py", "line": 12, "kind": "bf16", "targets": ["sm61"], "fact": "f", "text": "t"}],
        clean=[],
    )
    result = BENCH.evaluate(corpus, "sm61", [BENCH.Finding("RLC107", "t.py", 10, 14, "m")])
    assert result.recall == 1.0 and result.precision == 1.0


def test_glob_match():
    assert BENCH._glob_match("verl/trainer/config/rollout/rollout.yaml", "verl/trainer/config/**/*.yaml")
    assert BENCH._glob_match("verl/trainer/config/ppo.yaml", "verl/trainer/config/**/*.yaml")
    assert not BENCH._glob_match("trl/scripts/sub/x.py", "trl/scripts/*.py")
    assert BENCH._glob_match("docker/Dockerfile-uv", "docker/Dockerfile*")


def test_notice_rules_are_not_false_positives():
    corpus = _corpus(
        hazards=[{"file": "a.yaml", "line": 3, "kind": "compile", "targets": ["sm61"], "fact": "f", "text": "t"}],
        clean=[{"file": "a.yaml", "line": 7, "why": "dead key"}],
    )
    findings = [BENCH.Finding("RLC352", "a.yaml", 7, 7, "dead"), BENCH.Finding("RLC352", "a.yaml", 3, 3, "dead")]
    result = BENCH.evaluate(corpus, "sm61", findings)
    assert len(result.notices) == 2 and not result.false_positives and not result.true_positives
    assert result.recall == 0.0 and result.precision is None


def test_render_lists_dev_details_and_counts_holdout_ones():
    corpus = _corpus(
        hazards=[
            {"file": "a.yaml", "line": 3, "kind": "compile", "targets": ["sm61"], "fact": "f", "text": "x: 1"},
            {"file": "a.yaml", "line": 5, "kind": "bf16", "targets": ["sm61"], "fact": "f", "text": "y: 2"},
        ],
        clean=[{"file": "a.yaml", "line": 7, "why": "a comment"}],
    )
    findings = [BENCH.Finding("RLC107", "a.yaml", 7, 7, "m"), BENCH.Finding("RLC352", "a.yaml", 3, 3, "dead")]
    result = BENCH.evaluate(corpus, "sm61", findings)
    details = BENCH.render([result], 0.0).split("### c on sm61\n", 1)[1]
    assert details == (
        "\nMissed hazards (2):\n- `a.yaml:3` compile: `x: 1`\n- `a.yaml:5` bf16: `y: 2`\n"
        "\nFalse positives (1):\n- `a.yaml:7` RLC107 (bf16): judged clean: a comment\n"
        "\nNotices, not counted (1):\n- `a.yaml:3` RLC352 **(on a labeled hazard: the setting is live)**: dead\n"
    )
    corpus.split = "holdout"
    withheld = BENCH.render([BENCH.evaluate(corpus, "sm61", findings)], 0.0).split("### c on sm61\n", 1)[1]
    assert withheld.startswith("\nHoldout: details withheld") and "Missed 2 (compile 1, bf16 1)" in withheld
    assert "a.yaml" not in withheld


def test_unjudged_names_candidate_lines_no_label_covers(tmp_path, monkeypatch):
    monkeypatch.setattr(BENCH, "CORPUS_DIR", tmp_path)
    corpus = _corpus(
        hazards=[{"file": "a.yaml", "line": 2, "end_line": 3, "kind": "bf16", "targets": ["sm61"], "fact": "f",
                  "text": "dtype: bfloat16"}],
        clean=[{"file": "a.yaml", "line": 5, "why": "a comment"}],
    )
    corpus.include = ["a.yaml"]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.yaml").write_text(
        "x: 1\ndtype: bfloat16\nparam_dtype: bf16\nname: y\n# bf16 below\nmixed_precision: bf16\n")
    assert [(rel, n) for rel, n, _ in BENCH.unjudged(corpus)] == [("a.yaml", 6)]
    body = BENCH.render([BENCH.evaluate(corpus, "sm61", [])], 0.0, unjudged={"c": 1})
    assert "Candidate lines not judged in the label files: c 1." in body
    assert "none (every candidate line" in BENCH.render([BENCH.evaluate(corpus, "sm61", [])], 0.0)


@pytest.mark.parametrize("line, candidate", [
    ('    "torch",', True),  # a bare torch requirement in pyproject.toml or setup.py: the newest release
    ("torch", True),  # a requirements file's line
    ("  - torch", True),  # a conda file's pip list
    ("torch ; sys_platform == 'linux'", True),
    ("torch >= 2.4", True),
    ("torch<2.9", True),
    ("pip install torch torchvision", True),
    ("import torch", False),
    ("from torch import nn", False),
    ("x = torch.tensor(1)", False),
    ("torchvision", False),
])
def test_candidate_grep_reaches_torch_requirements_in_any_form(line: str, candidate: bool):
    assert bool(BENCH.CANDIDATE_RE.search(line)) is candidate
