"""One answer (issue 27 item 5): doctor, scan, matrix and verify, each run as the real CLI on the same trees (the
installed verl 0.9.1 and small launch-script trees), say the same thing: every key doctor recommends is live in the
knowledge scan applies to that verl and draws no finding from scan; doctor's rollout advice is RLC401's fix;
matrix's verdict is blocked exactly where scan leaves a finding without a fix in the run matrix judges; for a
launch script's own run (`--run`), matrix's verdict is decided by exactly the findings `scan --run` reports as
reached, the same whether the run is given as the script or as its command line; and whether the script's config
loads at all is one answer: `verify --load-check` (hydra-core composing it) FAILs exactly where a plain scan
reports RLC004 and `scan --run`/`matrix --run` refuse the script, naming the same key. (verify's training step,
without --load-check, runs the package with its own tiny config, not a script's: it answers another question.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from rlcompat.knowledge import hf_rollout, verl_config

try:
    VERL_VERSION = metadata.version("verl")
except metadata.PackageNotFoundError:
    VERL_VERSION = None

pytestmark = pytest.mark.skipif(VERL_VERSION != "0.9.1", reason="needs verl 0.9.1 installed (rlcompat[verl])")

ENV = {"RLCOMPAT_HF_ROLLOUT": ""}  # what this machine has installed decides, for every command alike
SCRIPT = """#!/bin/bash
set -x
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    actor_rollout_ref.rollout.name=vllm \\
    trainer.n_gpus_per_node=1
"""

COMMAND = " ".join(SCRIPT.split("\n", 2)[2].replace("\\\n", " ").split())  # the script's command, on one line
# The same run with an override written for verl 0.7 (examples/ppo_trainer/run_deepseek7b_llm.sh, volcengine/verl
# b178a3cd): verl 0.9.1 has the key at critic.fsdp, so Hydra refuses the command before anything runs.
REFUSED = SCRIPT.replace("    trainer.n_gpus_per_node=1", "    critic.model.fsdp_config.param_offload=True \\\n"
                         "    trainer.n_gpus_per_node=1")


def _verl_dir() -> Path:
    import importlib.util

    return Path(importlib.util.find_spec("verl").origin).parent  # found, not imported


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """doctor, scan and matrix for sm61 over the installed verl and a launch script, as their JSON."""

    def run(*args, cwd, code=False):
        env = {**os.environ, "NO_COLOR": "1", **ENV}
        proc = subprocess.run([sys.executable, "-m", "rlcompat", *args], capture_output=True, text=True, cwd=cwd,
                              env=env, timeout=600)
        if code:  # the exit code and both streams, for a command whose answer may be exit 2 (a refused run)
            return proc.returncode, proc.stdout, proc.stderr
        assert proc.returncode in (0, 1), proc.stderr
        return json.loads(proc.stdout)

    tree = tmp_path_factory.mktemp("launch")
    (tree / "run_grpo.sh").write_text(SCRIPT)
    verl = str(_verl_dir())
    out = {"tree": tree, "verl": verl, "run": run}
    out["doctor"] = run("doctor", "--target", "sm61", "--model-params", "0.5B", "--algo", "ppo",
                        "--output-format", "json", cwd=tree)
    for name, path in (("verl", verl), ("script", str(tree))):
        out[f"scan_{name}"] = run("scan", path, "--target", "sm61", "--output-format", "json", "--no-cache", cwd=tree)
        out[f"matrix_{name}"] = run("matrix", path, "--targets", "sm61", "--output-format", "json", "--no-cache",
                                    cwd=tree)
    out["matrix_megatron"] = run("matrix", verl, "--targets", "sm61", "--run", "megatron", "--output-format", "json",
                                 "--no-cache", cwd=tree)
    out["scan_run"] = run("scan", "--run", "run_grpo.sh", "--target", "sm61", "--output-format", "json", "--no-cache",
                          cwd=tree)
    for name, spec in (("matrix_run", "run_grpo.sh"), ("matrix_command", COMMAND)):
        out[name] = run("matrix", "--run", spec, "--targets", "sm61", "--output-format", "json", "--no-cache", cwd=tree)
    refused = tmp_path_factory.mktemp("refused")
    (refused / "run_grpo.sh").write_text(REFUSED)
    out["loads"] = {}
    for name, folder in (("clean", tree), ("refused", refused)):
        script = str(folder / "run_grpo.sh")
        out["loads"][name] = {
            "verify": run("verify", verl, "--load-check", "--script", script, "--output-format", "json", cwd=folder,
                          code=True),
            "scan": run("scan", script, "--target", "sm61", "--output-format", "json", "--no-cache", cwd=folder),
            "scan_run": run("scan", "--run", script, "--target", "sm61", "--output-format", "json", "--no-cache",
                            cwd=folder, code=True),
            "matrix_run": run("matrix", "--run", script, "--targets", "sm61", "--output-format", "json",
                              "--no-cache", cwd=folder, code=True)}
    return out


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+")


def test_every_key_doctor_recommends_is_live_in_scans_knowledge_and_scan_accepts_it(answers):
    doctor = answers["doctor"]
    version, exact, _ = verl_config.package_release(str(_verl_dir()))  # what scan applies to the package
    assert exact
    knowledge = verl_config.load_version(version)
    assert knowledge.label == "verl 0.9.1"
    recommended = doctor["memory"]["verl_overrides"]
    assert recommended and doctor["memory"]["verl_overrides_from"].startswith("verl 0.9.1 knowledge")
    if doctor["rollout"]:
        recommended = recommended + [doctor["rollout"]["override"]]
    live = {s.key for s in knowledge.settings}
    for override in recommended:
        assert _key(override) in live and _key(override) not in knowledge.dead, override
    # The same overrides in a launch script: scan finds nothing on any of their lines (no RLC106 dead key, no dtype).
    tree = answers["tree"] / "doctor_plan"
    tree.mkdir()
    lines = ["python3 -m verl.trainer.main_ppo \\"] + [f"    {o} \\" for o in recommended] + ["    trainer.n_gpus_per_node=1"]
    (tree / "run.sh").write_text("\n".join(lines) + "\n")
    scan = answers["run"]("scan", str(tree), "--target", "sm61", "--output-format", "json", "--no-cache", cwd=tree)
    on_overrides = [f for f in scan["findings"] if 2 <= f["line"] <= 1 + len(recommended)]
    assert on_overrides == [], [(f["code"], f["message"][:120]) for f in on_overrides]


def test_doctors_rollout_advice_is_rlc401s_fix(answers):
    doctor, scan = answers["doctor"], answers["scan_script"]
    [rlc401] = [f for f in scan["findings"] if f["code"] == "RLC401"]
    advice = doctor["rollout"]
    assert advice is not None and advice["registered"] == ["vllm", "sglang", "trtllm"]
    if hf_rollout.installed():
        edit = rlc401["fix"]["edits"][0]
        text = (answers["tree"] / "run_grpo.sh").read_text()
        # the fix rewrites the value of the key RLC401 names; doctor's override is that key = the fixed value
        line = text.splitlines()[rlc401["line"] - 1]
        assert advice["hf_installed"] is True and advice["override"] == "actor_rollout_ref.rollout.name=" + edit["content"]
        assert line.strip().startswith(advice["override"].split("=")[0] + "=")
        assert advice["override"] in rlc401["message"] and advice["override"] in advice["advice"]
    else:
        assert rlc401["fix"] is None and advice["hf_installed"] is False
        assert hf_rollout.INSTALL in rlc401["message"] and hf_rollout.INSTALL in advice["advice"]


def _blocked_by_scan(scan: dict, run: str, verl_dir: str) -> set[str]:
    """Codes of the findings scan leaves without a fix in `run`: a finding in a package file that the knowledge's
    [[run_option]] rows give to another option's run is not in it."""
    options = verl_config.load_version("0.9.1").run_options
    out = set()
    for f in scan["findings"]:
        if f["severity"] != "error" or f["fix"] is not None:
            continue
        path = os.path.abspath(f["path"])
        relative = os.path.relpath(path, verl_dir).replace(os.sep, "/") if path.startswith(verl_dir + os.sep) else None
        owner = next((o.name for o in options if relative is not None and o.covers(relative)), None)
        if owner is None or owner == run:
            out.add(f["code"])
    return out


def test_matrix_verdict_agrees_with_what_scan_leaves_unfixable_in_the_run(answers):
    verl = os.path.abspath(answers["verl"])
    for scan, matrix, run in ((answers["scan_verl"], answers["matrix_verl"], "default"),
                              (answers["scan_verl"], answers["matrix_megatron"], "megatron"),
                              (answers["scan_script"], answers["matrix_script"], "default")):
        [row] = matrix["targets"]
        unfixable = _blocked_by_scan(scan, run, verl)
        assert (row["status"] == "blocked") == bool(unfixable), (run, row["verdict"][:200], unfixable)
        if unfixable:
            assert set(row["decided_by"]) == unfixable
    [default] = answers["matrix_verl"]["targets"]
    assert default["status"] in ("runs_after_fix", "runs_after_unsafe_fix")  # issue 27's goal for the FSDP run
    assert "RLC120" in {c for r in default["not_in_run"] for c in r["codes"]}
    [megatron] = answers["matrix_megatron"]["targets"]
    assert megatron["status"] == "blocked" and megatron["first_blocker"]["code"] == "RLC120"


def test_matrix_of_a_launch_scripts_run_is_decided_by_what_scan_run_reaches(answers):
    """`matrix --run run_grpo.sh` and `scan --run run_grpo.sh` judge the same run: the verdict is blocked exactly when
    a reached error has no fix, and `decided_by` names the codes of the reached errors that decide it; the command
    line of the script, given to --run, gets the same verdict and the same findings left out."""
    reached = [f for f in answers["scan_run"]["findings"] if f["reached"] and f["severity"] == "error"]
    blockers = {f["code"] for f in reached if f["fix"] is None}
    [row] = answers["matrix_run"]["targets"]
    assert (row["status"] == "blocked") == bool(blockers), row["verdict"][:200]
    assert set(row["decided_by"]) == (blockers or {f["code"] for f in reached})
    assert answers["scan_run"]["summary"]["not_reached"] == len(row["not_reached"])
    [command] = answers["matrix_command"]["targets"]
    assert (command["status"], command["decided_by"], len(command["not_reached"])) == \
        (row["status"], row["decided_by"], len(row["not_reached"]))
    assert row["status"] in ("runs_after_fix", "runs_after_unsafe_fix")  # the FSDP GRPO run trains after fixes


def test_a_finding_that_says_it_needs_another_engine_lies_in_that_runs_files(answers):
    """RLC120's own words ("it applies when a run selects the Megatron engine") and the run model agree."""
    verl = os.path.abspath(answers["verl"])
    options = {o.name: o for o in verl_config.load_version("0.9.1").run_options}
    conditional = [f for f in answers["scan_verl"]["findings"] if "applies when a run selects the Megatron" in f["message"]]
    assert conditional
    for f in conditional:
        relative = os.path.relpath(os.path.abspath(f["path"]), verl).replace(os.sep, "/")
        assert options["megatron"].covers(relative), relative


def test_whether_a_scripts_config_loads_is_one_answer(answers):
    """verify's static part (hydra-core composing the script's config: `--load-check`), a plain scan (RLC004), and
    `scan --run`/`matrix --run` (exit 2: no run to judge) agree on each script, and name the same key. The clean
    script loads and draws none of them; the one with a verl 0.7 key fails all of them."""
    verdicts = {}
    for name, said in answers["loads"].items():
        code, out, err = said["verify"]
        assert code in (0, 1), (name, out, err)  # verify answered (2: it could not check)
        verify = json.loads(out)
        hydra = [c["error"].split("'")[1] for c in verify["commands"] if c["error"]]
        assert len(verify["commands"]) == 1 and all("Could not override" in c["error"]
                                                      for c in verify["commands"] if c["error"])
        scan = [f["message"].split("`")[1] for f in said["scan"]["findings"] if f["code"] == "RLC004"]
        run_refused = {}
        for command in ("scan_run", "matrix_run"):
            code, _, err = said[command]
            assert code in (0, 1, 2), err
            run_refused[command] = err.split("`")[1] if code == 2 and "is no key of the config" in err else None
        verdicts[name] = (hydra[:1], scan[:1], [run_refused["scan_run"]] if run_refused["scan_run"] else [],
                          [run_refused["matrix_run"]] if run_refused["matrix_run"] else [])
        assert verdicts[name][0] == verdicts[name][1] == verdicts[name][2] == verdicts[name][3], (name, verdicts[name])
    assert verdicts["clean"][0] == [] and verdicts["refused"][0] == ["critic.model.fsdp_config.param_offload"]


def test_the_plugin_and_its_description_agree():
    """rlcompat/knowledge/hf_rollout.py describes the plugin without importing it; its package (importable without verl) agrees."""
    import rlcompat.verl_plugin as plugin

    assert plugin.SUPPORTED_VERL_VERSIONS == hf_rollout.SUPPORTED_VERL and plugin.ROLLOUT_NAME == hf_rollout.NAME
    entry = next(line for line in (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text().splitlines()
                 if line.startswith("rlcompat_hf_rollout"))
    assert hf_rollout.plugin_among([entry.split("=", 1)[1].strip().strip('"')], True)
