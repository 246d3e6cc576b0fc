"""`rlcompat matrix`: one parse per file, the same findings as a scan per target, verdicts and exit codes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from rlcompat.pipeline import runner
from rlcompat.api import scan_paths
from rlcompat.config import Options, load_options
from rlcompat.pipeline.matrix import run_matrix
from rlcompat.cli.matrix import DEFAULT_TARGETS
from rlcompat.report import matrix as matrix_report
from rlcompat.knowledge.targets import resolve_target
from tests.test_cli import invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TARGETS = [resolve_target(n) for n in DEFAULT_TARGETS]

BF16 = "import torch\nmodel = AutoModelForCausalLM.from_pretrained('m', torch_dtype=torch.bfloat16)\n"
FLEX = "from torch.nn.attention.flex_attention import flex_attention\n\ndef attn(q, k, v):\n    return flex_attention(q, k, v)\n"


def _key(f) -> tuple:
    loc = f.location
    fix = None if f.fix is None else (f.fix.safety.value, f.fix.edits)
    return (f.path, loc.line, loc.column, loc.end_line, loc.end_column, f.code, f.message, f.severity, fix)


@pytest.mark.parametrize("jobs", [1, 2])
def test_matrix_finds_exactly_what_one_scan_per_target_finds(jobs):
    """Over every fixture (Python, YAML, shell, Markdown, Triton) and in worker processes too."""
    settings = load_options([str(FIXTURES)], None)
    run = run_matrix([str(FIXTURES)], TARGETS, settings, jobs=jobs)
    assert len(run.files) >= 16  # enough for the parallel path with jobs=2
    for i, target in enumerate(TARGETS):
        scan = scan_paths([str(FIXTURES)], target, settings, jobs=1)
        assert sorted(map(_key, run.findings(i))) == sorted(map(_key, scan.findings)), target.name
        assert run.suppressed[i] == scan.suppressed
    assert sum(len(run.findings(i)) for i in range(len(TARGETS))) > 50  # the comparison compared something


def test_each_file_is_parsed_once_for_all_targets(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text(BF16)
    (tmp_path / "b.py").write_text(FLEX)
    (tmp_path / "plain.py").write_text("x = 1\n")
    # grpo: no critic, so no file of an installed verl is reached (rlcompat/analysis/launch_path.py) and parsed beside these.
    (tmp_path / "run.sh").write_text("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
                                     "actor_rollout_ref.rollout.name=vllm\n")
    parsed = []
    real = runner.parse
    monkeypatch.setattr(runner, "parse", lambda language, *args: parsed.append(language) or real(language, *args))
    run = run_matrix([str(tmp_path)], TARGETS, Options(), jobs=1)
    assert sorted(parsed) == ["python", "python", "shell"]  # plain.py has no trigger: never parsed
    assert any(run.findings(i) for i in range(len(TARGETS)))


def _rows(tmp_path, *args) -> dict:
    code, out, _ = invoke("matrix", str(tmp_path), "--output-format", "json", "--no-cache", *args)
    doc = json.loads(out)
    return code, {t["name"]: t for t in doc["targets"]}


def test_bf16_is_fixable_on_pascal_and_runs_on_ampere(tmp_path):
    (tmp_path / "train.py").write_text(BF16)
    code, rows = _rows(tmp_path)
    assert code == 1
    assert list(rows) == list(DEFAULT_TARGETS)
    assert rows["sm61"]["status"] == "runs_after_fix"
    assert rows["sm61"]["verdict"] == "runs after `rlcompat fix` (1 fix: RLC101)"
    assert [f["code"] for f in rows["sm61"]["deciding"]] == ["RLC101"]
    assert rows["sm61"]["cells"]["dtype"] == {"blockers": 0, "fixable": 1, "unsafe_fixable": 0, "notes": 0}
    assert rows["sm61"]["first_blocker"] is None
    assert rows["sm80"]["status"] == "runs" and rows["sm80"]["totals"] == dict.fromkeys(matrix_report.KINDS, 0)


def test_a_finding_without_fix_blocks_and_names_itself(tmp_path):
    (tmp_path / "attn.py").write_text(FLEX)
    code, rows = _rows(tmp_path, "--targets", "sm61,sm75")
    assert code == 1 and list(rows) == ["sm61", "sm75"]
    blocker = rows["sm61"]["first_blocker"]
    assert rows["sm61"]["status"] == "blocked" and blocker["code"] == "RLC304" and blocker["line"] == 4
    assert rows["sm61"]["verdict"] == "blocked by 1 blocker: RLC304"
    assert rows["sm61"]["deciding"] == [blocker]  # JSON keeps every detail of what decides
    assert rows["sm61"]["cells"]["triton/compile"]["blockers"] == 1
    assert rows["sm75"]["status"] == "runs"


def test_text_table_and_exit_codes(tmp_path):
    (tmp_path / "clean.py").write_text("import torch\nx = torch.zeros(2, dtype=torch.float32)\n")
    code, out, _ = invoke("matrix", str(tmp_path), "--targets", "sm61,T4", "--no-cache")
    assert code == 0
    assert "sm61  runs" in out and "sm75  runs" in out and "blockers/fixable/unsafe-fixable/notes" in out
    (tmp_path / "train.py").write_text(BF16)
    code, out, _ = invoke("matrix", str(tmp_path), "--targets", "sm61,sm80", "--no-cache")
    assert code == 1 and "sm61  runs after `rlcompat fix` (1 fix: RLC101)\n" in out and "sm80  runs\n" in out
    assert [line.split()[:3] for line in out.splitlines() if line.startswith("sm61 ")][0] == ["sm61", "Tesla", "P40"]
    assert "-/1/-/-" in out  # the dtype cell of sm61
    assert invoke("matrix", str(tmp_path), "--targets", "sm61", "--exit-zero", "--no-cache")[0] == 0


@pytest.mark.parametrize("targets", ["sm61,nonsense", "auto", ","])
def test_bad_targets_are_usage_errors(tmp_path, targets):
    code, _, err = invoke("matrix", str(tmp_path), "--targets", targets)
    assert code == 2 and err.startswith("rlcompat: error: ") and len(err.strip().splitlines()) == 1


def test_missing_path_is_a_usage_error(tmp_path):
    code, _, err = invoke("matrix", str(tmp_path / "nope"))
    assert code == 2 and "nope" in err


def test_suppressions_select_and_config_hold_per_target(tmp_path):
    (tmp_path / "train.py").write_text(BF16.replace("bfloat16)\n", "bfloat16)  # rlcompat: ignore[RLC101]\n"))
    code, rows = _rows(tmp_path, "--targets", "sm61,sm80")
    assert code == 0 and rows["sm61"]["status"] == "runs" and rows["sm61"]["suppressed"] == 1
    assert rows["sm80"]["suppressed"] == 0  # nothing to silence there, and RLC101 does not apply: no RLC001 either
    (tmp_path / "attn.py").write_text(FLEX)
    assert _rows(tmp_path, "--targets", "sm61", "--ignore", "RLC3")[1]["sm61"]["status"] == "runs"
    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\nextend-exclude = ["attn.py"]\n')
    assert _rows(tmp_path, "--targets", "sm61")[1]["sm61"]["status"] == "runs"


def test_a_file_that_does_not_parse_is_reported_once_and_the_rest_runs(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\nx = torch.bfloat16(\n")
    (tmp_path / "train.py").write_text(BF16)
    code, out, _ = invoke("matrix", str(tmp_path), "--targets", "sm61,sm80", "--no-cache", "--output-format", "json")
    doc = json.loads(out)
    assert code == 1 and [e["path"].endswith("broken.py") for e in doc["errors"]] == [True]
    assert doc["targets"][0]["status"] == "runs_after_fix" and doc["targets"][1]["status"] == "runs"


def test_matrix_fills_and_reuses_each_targets_scan_cache(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(BF16)
    (tmp_path / "pyproject.toml").write_text("[tool.rlcompat]\n")
    monkeypatch.chdir(tmp_path)
    settings = load_options(["."], None)
    first = run_matrix(["."], TARGETS[:2], settings, use_cache=True)
    parsed = []
    real = runner.parse
    monkeypatch.setattr(runner, "parse", lambda language, *args: parsed.append(language) or real(language, *args))
    again = run_matrix(["."], TARGETS[:2], settings, use_cache=True)
    scan = scan_paths(["."], TARGETS[1], settings, use_cache=True)
    assert parsed == [] and all(r.from_cache for r in scan.results)
    assert [list(map(_key, again.findings(i))) for i in range(2)] == [list(map(_key, first.findings(i))) for i in range(2)]
    assert list(map(_key, scan.findings)) == list(map(_key, first.findings(1))) != []


def test_families_cover_every_file_rule():
    from rlcompat.rules import file_rules

    prefixes = {p for p, _ in matrix_report.FAMILIES}
    assert all(r.code[:4] in prefixes for r in file_rules())


def test_json_matrix_document_shape(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent(BF16))
    code, out, _ = invoke("matrix", str(tmp_path), "--targets", "sm70", "--output-format", "json", "--no-cache")
    doc = json.loads(out)
    assert doc["command"] == "matrix" and doc["schema_version"] == 1 and doc["files"] == 1
    assert [f["name"] for f in doc["families"]] == ["dtype", "attention", "triton/compile", "rollout", "environment", "other"]
    row = doc["targets"][0]
    assert set(row) == {"name", "capability", "architecture", "gpus", "cells", "totals", "suppressed", "status", "verdict",
                        "first_blocker", "deciding", "decided_by", "scope", "not_in_run", "rollout"}
    assert doc["run"] == "default" and row["not_in_run"] == []
    assert row["capability"] == "7.0" and row["totals"]["fixable"] + row["totals"]["unsafe_fixable"] == 1


def test_each_verdict_is_one_short_line_with_the_blockers_below(tmp_path):
    """Many blockers with long messages: the verdict line names the target, the verdict and the deciding rules
    (at most three codes, then a count); the blockers follow, indented, with their messages and locations (the first
    five, then where to see the rest)."""
    for i in range(7):
        (tmp_path / f"attn{i}.py").write_text(FLEX)
    (tmp_path / "train.py").write_text(BF16)
    code, out, _ = invoke("matrix", str(tmp_path), "--targets", "sm61,sm75,sm80", "--no-cache")
    lines = out.splitlines()
    import re

    verdicts = {line.split()[0]: line for line in lines if re.match(r"sm\d\d  (blocked|runs)", line)}
    assert code == 1
    assert verdicts["sm61"] == "sm61  blocked by 7 blockers: RLC304 x7"
    assert verdicts["sm75"] == "sm75  runs after `rlcompat fix` (1 fix: RLC101)"
    assert verdicts["sm80"] == "sm80  runs"
    below = lines[lines.index(verdicts["sm61"]) + 1:lines.index(verdicts["sm75"])]
    assert len(below) == 6 and all(line.startswith("      ") for line in below)
    assert below[0].strip().startswith(f"{tmp_path / 'attn0.py'}:4: RLC304 ")
    assert below[-1].strip() == "... 2 more blockers: `rlcompat scan --target sm61` lists them"
    assert max(len(v) for v in verdicts.values()) <= 80
    doc = json.loads(invoke("matrix", str(tmp_path), "--targets", "sm61", "--no-cache", "--output-format", "json")[1])
    row = doc["targets"][0]
    assert row["verdict"] == "blocked by 7 blockers: RLC304 x7" and len(row["deciding"]) == 7
    assert all(f["message"] and f["line"] == 4 for f in row["deciding"])


def test_a_verdict_names_at_most_three_rules():
    from rlcompat.report.matrix import _codes

    class F:
        def __init__(self, code):
            self.code = code

    found = [F(c) for c in ["RLC101"] * 3 + ["RLC201"] * 2 + ["RLC105", "RLC104", "RLC302", "RLC303"]]
    assert _codes(found) == "RLC101 x3, RLC201 x2, RLC104, 3 more rules"


KERNEL = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef sum_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):\n"
          "    row = tl.program_id(0)\n    offs = tl.arange(0, BLOCK)\n"
          "    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)\n"
          "    tl.atomic_add(out_ptr, tl.sum(x, axis=0))\n")


def _verl_tree(tmp_path, version="0.9.1"):
    from tests.verl_trees import verl_package

    return verl_package(tmp_path, version, {
        "trainer/config/engine/megatron.yaml": "# Mixed precision training param dtype\ndtype: bfloat16\n",
        "utils/kernel/kernels.py": KERNEL,
        "workers/engine/fsdp/transformer_impl.py": BF16,
    })


@pytest.mark.usefixtures("fresh_verl_detection")
def test_default_run_verdict_leaves_out_what_only_another_run_reaches(tmp_path):
    package = _verl_tree(tmp_path)
    code, rows = _rows(package, "--targets", "sm61")
    row = rows["sm61"]
    assert row["status"] == "runs_after_fix" and row["first_blocker"] is None, row["verdict"]
    assert row["decided_by"] == ["RLC101"] and row["cells"]["dtype"]["blockers"] == 0
    apart = {r["run"]: r for r in row["not_in_run"]}
    assert set(apart) == {"megatron", "fused-kernels"}
    assert apart["megatron"]["codes"] == ["RLC120"] and apart["megatron"]["counts"]["blockers"] == 1
    assert apart["fused-kernels"]["codes"] == ["RLC302"] and "use_fused_kernels" in apart["fused-kernels"]["selected_by"]
    assert "decided by RLC101; not in it: 1 --run megatron (blocked by RLC120)" in row["scope"]
    assert "default run (main_ppo with ppo_trainer and the FSDP engine" in row["scope"]
    assert row["rollout"].endswith("actor_rollout_ref.rollout.name=hf")  # no engine verl 0.9.1 registers runs on sm61
    assert code == 1  # a fix is still needed

    code, rows = _rows(package, "--targets", "sm61", "--run", "megatron")
    row = rows["sm61"]
    assert row["status"] == "blocked" and row["first_blocker"]["code"] == "RLC120" and row["decided_by"] == ["RLC120"]
    assert [r["run"] for r in row["not_in_run"]] == ["fused-kernels"]

    _, rows = _rows(package, "--targets", "sm61", "--run", "all")
    assert rows["sm61"]["status"] == "blocked" and rows["sm61"]["not_in_run"] == []


@pytest.mark.usefixtures("fresh_verl_detection")
def test_a_verl_tree_of_unknown_version_leaves_nothing_out(tmp_path):
    package = _verl_tree(tmp_path, version=None)
    (package / "workers" / "engine_workers.py").unlink(missing_ok=True)  # no [detect] match either
    _, rows = _rows(package, "--targets", "sm61")
    assert rows["sm61"]["status"] == "blocked" and rows["sm61"]["not_in_run"] == []


def test_an_unknown_run_is_a_usage_error(tmp_path):
    (tmp_path / "train.py").write_text(BF16)
    code, out, err = invoke("matrix", str(tmp_path), "--run", "deepspeed", "--no-cache")
    assert code == 2 and "--run 'deepspeed' names no run" in out + err and "megatron" in out + err


def test_a_conda_environment_named_otherwise_is_read_as_one_as_scan_reads_it(tmp_path):
    """Matrix and scan are one pipeline: a YAML file that is a conda environment by its content (deps.yaml) is read
    as conda by both (matrix once read it as plain YAML and missed RLC601, which scan reported)."""
    env = FIXTURES / "declared" / "conda_env_pip_index" / "input" / "environment.yml"
    (tmp_path / "deps.yaml").write_text(env.read_text(encoding="utf-8"), encoding="utf-8")
    sm61 = resolve_target("sm61")
    run = run_matrix([str(tmp_path)], [sm61], Options(), jobs=1)
    scan = scan_paths([str(tmp_path)], sm61, Options(), jobs=1)
    assert [f.code for f in run.findings(0)] == [f.code for f in scan.findings] == ["RLC601"]
