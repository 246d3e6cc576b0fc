"""`scan|fix|matrix --run LAUNCH.sh` (issue 27 items 1 and 3): every finding of a launch script and of the verl package
it runs is reached by that run or not, with why; output, exit codes and `fix --minimal` count reached findings only.
The trees are small verl-shaped packages of release 0.9.1 (so its knowledge's run rows apply) beside a script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlcompat.analysis import run_scope
from rlcompat.knowledge import verl_config
from tests.verl_trees import verl_package

HAZARD = "import torch\n\nX = torch.ones(2, dtype=torch.bfloat16)\n"  # RLC101 at line 3, with a safe fix
MAIN = '''from verl.workers.config import engine
from verl.workers.engine.megatron import impl
from verl.checkpoint_engine import nccl_checkpoint_engine


def main():
    from verl.utils import lazy
'''
FSDP = '''import torch


class FSDPEngine:
    def __init__(self):
        self._autocast_dtype = torch.bfloat16

    def _build_fsdp_module(self, mixed_precision_config):
        if mixed_precision_config is not None:
            param_dtype = torch.bfloat16
        else:
            param_dtype = torch.bfloat16
        return param_dtype

    def _merged_lora_per_tensor_param(self):
        lora_dtype = torch.bfloat16
        return lora_dtype
'''
FILES = {
    # a regular package: under `python -m rlcompat` in the tree, `import verl` finds it before the venv's verl, and
    # --run must still take it for the tree's own copy, not for the installed distribution
    "__init__.py": "",
    "trainer/main_ppo.py": MAIN,
    "workers/config/engine.py": HAZARD,  # imported at module level by the entry point: reached
    "workers/engine/megatron/impl.py": HAZARD,  # imported, but only model_engine=megatron runs it
    "checkpoint_engine/nccl_checkpoint_engine.py": HAZARD,  # imported; only backend=nccl uses it
    "utils/lazy.py": HAZARD,  # imported inside a function no row names: not imported by the run
    "utils/unused.py": HAZARD,  # imported by nothing
    "workers/engine/__init__.py": "from verl.workers.engine.fsdp import transformer_impl\n",
    "workers/engine/fsdp/transformer_impl.py": FSDP,  # [[run_module]] training-engines: every run
}
SELECT = ("--select", "RLC101")  # the hazards above; the script's own findings are the config rules' business
COMMAND = ("#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n"
           "    actor_rollout_ref.rollout.name=hf{extra}\n")


@pytest.fixture
def tree(tmp_path, fresh_verl_detection):
    verl_package(tmp_path, "0.9.1", FILES)
    (tmp_path / "verl" / "workers" / "__init__.py").write_text("")
    return tmp_path


def _script(tree: Path, *overrides: str) -> Path:
    path = tree / "run.sh"
    path.write_text(COMMAND.format(extra="".join(f" \\\n    {o}" for o in overrides)))
    return path


def _json(run_cli, *args, cwd):
    code, out, err = run_cli(*args, *SELECT, "--target", "sm61", "--output-format", "json", "--no-cache", cwd=cwd)
    assert code in (0, 1), err
    return code, json.loads(out)


def _where(findings) -> list[str]:
    return [f"{p}:{n}" for p, n in sorted((f["path"].split("verl/", 1)[-1], f["line"]) for f in findings)]


def test_scan_run_reports_reached_findings_and_counts_the_rest_by_why(tree, run_cli):
    _script(tree)
    code, doc = _json(run_cli, "scan", "--run", "run.sh", cwd=tree)
    reached = [f for f in doc["findings"] if f["reached"]]
    assert _where(reached) == ["workers/config/engine.py:3", "workers/engine/fsdp/transformer_impl.py:6",
                               "workers/engine/fsdp/transformer_impl.py:12"]
    why = {f"{f['path'].split('verl/', 1)[-1]}:{f['line']}": f["not_reached"] for f in doc["findings"]
           if not f["reached"]}
    assert why["workers/engine/megatron/impl.py:3"] == {"reason": "option", "detail": "megatron"}
    assert why["checkpoint_engine/nccl_checkpoint_engine.py:3"]["detail"] == "checkpoint-nccl"
    assert why["utils/lazy.py:3"]["reason"] == why["utils/unused.py:3"]["reason"] == "not-imported"
    # mixed_precision is unset (null): its `if` branch does not run, the else branch does; a GRPO run has no LoRA
    assert why["workers/engine/fsdp/transformer_impl.py:10"]["detail"] == "fsdp-mixed-precision"
    assert why["workers/engine/fsdp/transformer_impl.py:16"]["detail"] == "lora"
    assert doc["summary"]["findings"] == 3 and doc["summary"]["not_reached"] == 6
    assert code == 1


def test_text_output_lists_reached_ones_and_ends_with_the_count_of_the_rest(tree, run_cli):
    _script(tree)
    code, out, err = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--no-cache", *SELECT, cwd=tree)
    assert code == 1, err
    assert "workers/config/engine.py:3" in out and "megatron/impl.py" not in out
    assert "Not reached by this run: 6 findings (4 in code only another run option reaches; 2 in files the run " \
           "never imports" in out
    assert "Found 3 findings this run reaches" in out.splitlines()[-1]


def test_overrides_select_what_the_run_reaches(tree, run_cli):
    _script(tree, "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl",
            "++actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32",
            "actor_rollout_ref.model.lora_rank=8")
    _, doc = _json(run_cli, "scan", "--run", "run.sh", cwd=tree)
    assert _where([f for f in doc["findings"] if f["reached"]]) == [
        "checkpoint_engine/nccl_checkpoint_engine.py:3", "workers/config/engine.py:3",
        "workers/engine/fsdp/transformer_impl.py:6", "workers/engine/fsdp/transformer_impl.py:10",
        "workers/engine/fsdp/transformer_impl.py:12",  # the ref keeps the default (no mixed_precision): else runs
        "workers/engine/fsdp/transformer_impl.py:16"]


def test_exit_zero_and_all_clear_only_when_nothing_reached_remains(tree, run_cli):
    for path in ("workers/config/engine.py", "workers/engine/fsdp/transformer_impl.py"):
        (tree / "verl" / path).write_text("X = 1\n")
    _script(tree)
    code, out, err = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--no-cache", *SELECT, cwd=tree)
    assert code == 0, out + err
    assert "All clear for this run" in out and "Not reached by this run: 4 findings" in out
    code, out, _ = run_cli("scan", ".", "--target", "sm61", "--no-cache", *SELECT, cwd=tree)
    assert code == 1 and "All clear" not in out  # without --run every finding counts


def test_fix_run_minimal_leaves_files_the_run_does_not_reach_untouched(tree, run_cli):
    _script(tree)
    before = {p: (tree / "verl" / p).read_text() for p in FILES}
    code, out, err = run_cli("fix", "--run", "run.sh", "--minimal", "--target", "sm61", "--no-cache", *SELECT, cwd=tree)
    assert code == 0, out + err  # what the run reaches is fixed; the rest does not count
    after = {p: (tree / "verl" / p).read_text() for p in FILES}
    changed = sorted(p for p in FILES if before[p] != after[p])
    assert changed == ["workers/config/engine.py", "workers/engine/fsdp/transformer_impl.py"]
    fsdp = after["workers/engine/fsdp/transformer_impl.py"].splitlines()
    assert "float32" in fsdp[5] and "float32" in fsdp[11]  # __init__ and the else branch: reached
    assert "bfloat16" in fsdp[9] and "bfloat16" in fsdp[15]  # the if branch and the LoRA export: not reached
    # a full fix --run rewrites every fixable finding
    code, _, err = run_cli("fix", "--run", "run.sh", "--target", "sm61", "--no-cache", *SELECT, cwd=tree)
    assert code == 0, err
    assert all("bfloat16" not in (tree / "verl" / p).read_text() for p in FILES)


def test_fix_minimal_with_a_trace_keeps_only_what_ran(tree, run_cli):
    _script(tree)
    report = tree / "trace.json"
    report.write_text(json.dumps({"trace": {
        "reached": [{"code": "RLC101", "location": "workers/config/engine.py:3", "at_import": True}],
        "not_reached": [{"code": "RLC101", "location": "workers/engine/fsdp/transformer_impl.py:6",
                         "at_import": False}],
        "not_traceable": []}}))
    code, out, err = run_cli("fix", "--run", "run.sh", "--minimal", "--trace", str(report), "--target", "sm61",
                             "--no-cache", *SELECT, cwd=tree)
    assert code == 0, out + err
    assert "float32" in (tree / "verl/workers/config/engine.py").read_text()
    fsdp = (tree / "verl/workers/engine/fsdp/transformer_impl.py").read_text().splitlines()
    assert "bfloat16" in fsdp[5] and "float32" in fsdp[11]  # the trace says __init__'s line never ran


def test_matrix_run_gives_the_verdict_of_that_run(tree, run_cli):
    _script(tree)
    code, out, err = run_cli("matrix", "--run", "run.sh", "--targets", "sm61,sm80", "--output-format", "json",
                             "--no-cache", *SELECT, cwd=tree)
    assert code == 1, err
    rows = {r["name"]: r for r in json.loads(out)["targets"]}
    assert rows["sm61"]["status"] == "runs_after_fix" and rows["sm61"]["decided_by"] == ["RLC101"]
    assert _where(rows["sm61"]["deciding"]) == _where(
        [{"path": "verl/workers/config/engine.py", "line": 3},
         {"path": "verl/workers/engine/fsdp/transformer_impl.py", "line": 6},
         {"path": "verl/workers/engine/fsdp/transformer_impl.py", "line": 12}])
    assert len(rows["sm61"]["not_reached"]) == 6 and rows["sm80"]["status"] == "runs"


@pytest.mark.parametrize("args, words", [
    (("fix", ".", "--minimal"), "need --run"),
    (("fix", "--run", "run.sh", "--trace", "t.json"), "--trace narrows --minimal"),
    (("fix", "--run", "run.sh", "--minimal", "--trace", "other.sh"), "not a `rlcompat verify"),
    (("scan", "--run", "missing.sh"), "missing.sh"),
    (("scan", "--run", "other.sh"), "runs no verl.trainer.main_ppo command"),
    (("matrix", "--run", "nothing-like-a-run"), "names no run, no launch script and no command line"),
])
def test_usage_errors_exit_2_with_one_line(tree, run_cli, args, words):
    (tree / "other.sh").write_text("#!/bin/bash\necho hello\n")
    _script(tree)
    target = ("--targets", "sm61") if args[0] == "matrix" else ("--target", "sm61")
    code, out, err = run_cli(*args, *target, cwd=tree)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_selects_is_true_false_or_unknown():
    knowledge = verl_config.load_version("0.9.1")
    lora = (( ("actor_rollout_ref.model.lora_rank", ("!0",)), ),)
    assert run_scope.selects(lora, knowledge, {}) is False  # the default, 0
    assert run_scope.selects(lora, knowledge, {"actor_rollout_ref.model.lora_rank": "16"}) is True
    assert run_scope.selects(lora, knowledge, {"actor_rollout_ref.model.lora_rank": None}) is None  # $RANK
    assert run_scope.selects((), knowledge, {}) is False and run_scope.selects((), knowledge, {}, unconditional=True)


def test_sarif_results_carry_reached_and_unreached_ones_are_notes(tree, run_cli):
    _script(tree)
    code, out, err = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--output-format", "sarif", "--no-cache",
                             *SELECT, cwd=tree)
    assert code == 1, err
    results = json.loads(out)["runs"][0]["results"]
    reached = [r for r in results if r["properties"]["reached"]]
    others = [r for r in results if not r["properties"]["reached"]]
    assert len(reached) == 3 and len(others) == 6
    assert all(r["level"] == "error" for r in reached) and all(r["level"] == "note" for r in others)
    assert {r["properties"]["notReached"]["reason"] for r in others} == {"option", "not-imported"}


def test_every_function_and_module_the_0_9_1_rows_name_is_in_verl_0_9_1(installed_verl_091):
    """The rows are proofs of the release: each `functions` region and `[[run_module]]` module is there."""
    import os

    from rlcompat.analysis import run_model

    package = installed_verl_091
    knowledge = verl_config.load_version("0.9.1")
    for option in knowledge.run_options:
        for code in option.functions:
            where, _, branch = code.partition("|")
            file, _, qualname = where.partition(":")
            assert run_model.region_lines(os.path.join(package, file), qualname, branch.strip()), (option.name, code)
        for f in option.files:
            assert os.path.exists(os.path.join(package, f)), (option.name, f)
    parent = os.path.dirname(package)
    for row in knowledge.run_modules:
        for module in row.modules:
            base = os.path.join(parent, *module.split("."))
            assert os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py")), module


@pytest.mark.parametrize("words", ["--config-name mine", "--config-name=mine.yaml", "-cn mine",
                                   "--config-path my_configs"])
def test_a_command_composing_another_config_assumes_none_of_the_default_runs_values(tree, run_cli, words):
    """With a config that does not compose ppo_trainer, model_engine (and every key the command leaves unset) is not
    known to be dp: the Megatron engine's code stays in the run rather than being left out on the default config's
    word. A relative --config-path is read from the entry module's directory, as Hydra reads it."""
    for where in ("verl/trainer/config/mine.yaml", "verl/trainer/my_configs/ppo_trainer.yaml"):
        (tree / where).parent.mkdir(parents=True, exist_ok=True)
        (tree / where).write_text("trainer:\n  total_epochs: 1\nalgorithm:\n  adv_estimator: gae\n")
    script = tree / "run.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo " + words + " \\\n    algorithm.adv_estimator=grpo\n")
    _, doc = _json(run_cli, "scan", "--run", "run.sh", cwd=tree)
    reached = _where([f for f in doc["findings"] if f["reached"]])
    assert "workers/engine/megatron/impl.py:3" in reached and "checkpoint_engine/nccl_checkpoint_engine.py:3" in reached
    assert "utils/unused.py:3" not in reached  # what no config imports stays out
    assert "composes" in doc["run"]


def test_fix_run_of_an_installed_verl_keeps_the_originals_and_restore_undoes_it(tmp_path, monkeypatch,
                                                                                 fresh_verl_detection):
    """The run's verl is the installed distribution (a fake `verl` 0.9.1 in a temporary site-packages first on
    sys.path): `fix --run --minimal` writes it through `fix --installed`'s pipeline, so the originals are kept and
    `rlcompat restore verl` gives them back. In-process, so the fake is what `import verl` would find."""
    import base64
    import hashlib
    import importlib
    import os
    import sys

    from typer.testing import CliRunner

    from rlcompat.knowledge import identity
    from rlcompat.analysis import run_package
    from rlcompat.cli.app import app

    site = tmp_path / "site-packages"
    verl_package(site, "0.9.1", FILES)
    for init in ("__init__.py", "workers/__init__.py"):  # a regular package, found before the venv's own verl
        (site / "verl" / init).write_text("")
    info = site / "verl-0.9.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: verl\nVersion: 0.9.1\n")
    rows = []
    for path in sorted(p for p in (site / "verl").rglob("*") if p.is_file()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()
        rows.append(f"{path.relative_to(site).as_posix()},sha256={digest},{path.stat().st_size}")
    (info / "RECORD").write_text("\n".join(rows + ["verl-0.9.1.dist-info/METADATA,,", "verl-0.9.1.dist-info/RECORD,,"]))
    monkeypatch.setattr(sys, "path", [str(site)] + sys.path)
    # A verl imported earlier in this process would be found in sys.modules before the path: drop it, and make sure
    # the package found is the fake one before `fix` may write into it (never the venv's own verl).
    for name in [m for m in sys.modules if m == "verl" or m.startswith("verl.")]:
        monkeypatch.delitem(sys.modules, name)
    importlib.invalidate_caches()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for cached in (run_package.installed_package, identity.installed_version):
        cached.cache_clear()
    assert os.path.realpath(run_package.installed_package() or "") == os.path.realpath(site / "verl")
    monkeypatch.chdir(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    _script(work)
    before = {p: (site / "verl" / p).read_text() for p in FILES}
    try:
        result = CliRunner().invoke(app, ["fix", "--run", str(work / "run.sh"), "--minimal", "--target", "sm61",
                                          "--no-cache", *SELECT], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        changed = sorted(p for p in FILES if (site / "verl" / p).read_text() != before[p])
        assert changed == ["workers/config/engine.py", "workers/engine/fsdp/transformer_impl.py"], result.output
        assert "rlcompat restore verl" in result.output
        undone = CliRunner().invoke(app, ["restore", "verl"], catch_exceptions=False)
        assert undone.exit_code == 0, undone.output
        assert {p: (site / "verl" / p).read_text() for p in FILES} == before
    finally:
        for cached in (run_package.installed_package, identity.installed_version):
            cached.cache_clear()
