"""RLC004 (issue 27): a launch script that overrides a key the config its command composes lacks is never "All
clear": Hydra stops such a run before it starts. A plain scan reports each such override at its line, and `scan
--run` refuses the same script naming the same key (one function answers both: analysis/command_config.py)."""

from __future__ import annotations

import json

import pytest

from rlcompat.config import Options
from rlcompat.knowledge.identity import pinned
from rlcompat.knowledge.targets import resolve_target
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.source import decode
from tests.test_run_command import _verl_configs
from tests.test_run_model import tree  # noqa: F401 (the fixture: a verl-shaped 0.9.1 package)

ENTRY = "python3 -m verl.trainer.main_ppo"
SCRIPT = """#!/bin/bash
set -x
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=gae \\
    critic.model.fsdp_config.param_offload=True \\
    trainer.use_legacy_worker_impl=auto \\
    actor_rollout_ref.model.override_config.foo=1 \\
    +critic.model.fsdp_config.optimizer_offload=True \\
    ~trainer.balance_batch \\
    critic.fsdp.optimizer_offload=True \\
    trainer.n_gpus_per_node=1
"""


def _rlc004(run_cli, path, cwd) -> tuple[int, list[dict]]:
    code, out, err = run_cli("scan", str(path), "--target", "sm61", "--select", "RLC004", "--output-format", "json",
                             "--no-cache", cwd=cwd)
    assert code in (0, 1), err
    return code, [f for f in json.loads(out)["findings"] if f["code"] == "RLC004"]


def test_each_key_the_installed_verls_config_lacks_is_reported_at_its_line(installed_verl_091, run_cli, tmp_path):
    (tmp_path / "run.sh").write_text(SCRIPT)
    code, found = _rlc004(run_cli, tmp_path / "run.sh", tmp_path)
    assert code == 1 and [f["line"] for f in found] == [5, 6, 7]
    offload, legacy, free = (f["message"] for f in found)
    assert offload.startswith("`critic.model.fsdp_config.param_offload` is no key of the config "
                              "verl.trainer.main_ppo composes (")
    assert "Hydra stops the run before it starts" in offload
    assert "this release spells it `critic.fsdp.param_offload`" in offload  # engine/fsdp.yaml, mounted elsewhere
    assert found[0]["fix"]["edits"][0]["content"] == "critic.fsdp.param_offload"
    assert "remove it" in legacy and "+trainer.use_legacy_worker_impl=" in legacy and found[1]["fix"] is None
    assert "`actor_rollout_ref.model.override_config` is a mapping verl reads whole" in free  # `{}`: `+` adds
    # --run judges the same script the same way: Hydra refuses it, so there is no run to judge (exit 2)
    code, _, err = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--no-cache", cwd=tmp_path)
    assert code == 2 and err.strip().endswith(offload), err


def test_a_script_whose_keys_the_config_has_draws_none(installed_verl_091, run_cli, tmp_path):
    lines = SCRIPT.splitlines()
    (tmp_path / "run.sh").write_text("\n".join(lines[:4] + lines[7:]) + "\n")
    code, found = _rlc004(run_cli, tmp_path / "run.sh", tmp_path)
    assert found == [] and code == 0
    code, _, err = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--no-cache", cwd=tmp_path)
    assert code in (0, 1), err


def test_a_trees_own_package_and_the_users_config_decide_the_keys(tree, run_cli):
    """The tree's verl 0.9.1 package (its configs as written), and a config of the user's own that composes it:
    a key of either is accepted, any other refused; an edit of the user's config changes the answer (the result
    depends on that file, so it is not answered from the cache)."""
    _verl_configs(tree)
    (tree / "conf").mkdir()
    (tree / "conf" / "my_ppo.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\nhydra:\n  searchpath:\n"
                                              "    - pkg://verl.trainer.config\ncustom:\n  a: 1\n")
    (tree / "run.sh").write_text(f"#!/bin/bash\n{ENTRY} \\\n    actor_rollout_ref.rollout.name=hf \\\n"
                                 "    actor_rollout_ref.rollout.nope=1 \\\n    +actor_rollout_ref.rollout.added=1\n"
                                 f"{ENTRY} --config-path={tree / 'conf'} --config-name=my_ppo \\\n    custom.a=2 \\\n"
                                 "    custom.b=2 \\\n    model_engine=megatron\n")
    code, out, err = run_cli("scan", "run.sh", "--target", "sm61", "--select", "RLC004", "--output-format", "json",
                             cwd=tree)
    assert code == 1, err
    assert [(f["line"], f["message"].split("`")[1]) for f in json.loads(out)["findings"]] == \
        [(4, "actor_rollout_ref.rollout.nope"), (8, "custom.b")]
    (tree / "conf" / "my_ppo.yaml").write_text((tree / "conf" / "my_ppo.yaml").read_text() + "  b: 1\n")
    code, out, _ = run_cli("scan", "run.sh", "--target", "sm61", "--select", "RLC004", "--output-format", "json",
                           cwd=tree)
    assert [f["line"] for f in json.loads(out)["findings"]] == [4]


def test_a_pinned_release_not_on_disk_is_judged_by_its_knowledge_alone(monkeypatch):
    """No verl package here (a CI machine scanning a repository that pins verl==0.9.1): only the keys the
    release's knowledge proves absent (`[[absent]]`) are reported, and only on a command that composes the entry
    point's own config."""
    from rlcompat.analysis import run_package

    monkeypatch.setattr(run_package, "installed_package", lambda: None)
    text = (f"{ENTRY} critic.model.fsdp_config.param_offload=True reward_model.use_reward_loop=True\n"
            f"{ENTRY} --config-name my_ppo critic.model.fsdp_config.param_offload=True\n")
    checker = Checker(resolve_target("sm61"), Options(select=("RLC004",)), identity=pinned({"verl": "0.9.1"}))
    result = checker.check_source(decode("run.sh", text.encode(), "shell"), "shell")
    [finding] = result.findings
    assert finding.location.line == 1 and "critic.model.fsdp_config.param_offload" in finding.message
    assert "_generated_ppo_trainer.yaml:675-733" in finding.message  # the knowledge row's proof
    assert "this release spells it `critic.fsdp.param_offload`" in finding.message


def test_a_relative_config_path_is_read_from_the_entry_module_as_hydra_reads_it(installed_verl_091, run_cli,
                                                                                 tmp_path):
    """`--config-path=config` (verl's Megatron examples, e.g. examples/ppo_trainer/run_deepseek_full_hh_rlhf.sh at
    volcengine/verl b178a3cd) is verl/trainer/config: Hydra reads a relative path from the file declaring
    @hydra.main. verify's load check (hydra-core itself) and RLC004 both find the key ppo_megatron_trainer lacks;
    the load check used to look for config/ beside the script and check nothing."""
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{ENTRY} --config-path=config \\\n"
                                     "    --config-name='ppo_megatron_trainer' \\\n    reward_model.use_reward_loop=True\n")
    code, out, err = run_cli("verify", installed_verl_091, "--load-check", "--script", str(tmp_path / "run.sh"),
                             "--output-format", "json", cwd=tmp_path)
    [command] = json.loads(out)["commands"]
    assert code == 1 and "Could not override 'reward_model.use_reward_loop'" in command["error"], (out, err)
    assert command["config"].endswith("verl/trainer/config/ppo_megatron_trainer.yaml")
    _, found = _rlc004(run_cli, tmp_path / "run.sh", tmp_path)
    assert [(f["line"], f["message"].split("`")[1]) for f in found] == [(4, "reward_model.use_reward_loop")]


ADDS = ["+trainer.total_epochs=2", "+actor_rollout_ref.model.custom_chat_template=chatml", "++trainer.save_freq=3",
        "+trainer.brand_new=1", "~trainer.test_freq +trainer.test_freq=4", "+actor_rollout_ref.rollout.dtype=float16",
        "+actor_rollout_ref.rollout.name=hf", "+trainer.total_epochs=[1]", "+data.max_prompt_length=5"]


def test_a_plus_for_a_key_the_config_holds_is_reported_where_hydra_refuses_it(installed_verl_091, run_cli, tmp_path):
    """`+key=` for a key the composed config already holds a value at: hydra-core refuses it (`Could not append to
    config`, S165) unless the value there is null or `???`, or the value added is a list. One command per override,
    so verify's load check (hydra-core composing verl 0.9.1's config in a child process) says which ones Hydra
    refuses, and RLC004 must name exactly those; `fix` drops the `+` and the script then loads."""
    (tmp_path / "run.sh").write_text("".join(f"{ENTRY} {words}\n" for words in ADDS))
    code, out, err = run_cli("verify", installed_verl_091, "--load-check", "--script", str(tmp_path / "run.sh"),
                             "--output-format", "json", cwd=tmp_path)
    refused = [c["line"] for c in json.loads(out)["commands"] if c["error"]]
    assert all("Could not append to config" in c["error"] for c in json.loads(out)["commands"] if c["error"]), out
    assert code == 1 and refused == [1, 6, 9], (out, err)
    code, found = _rlc004(run_cli, tmp_path / "run.sh", tmp_path)
    assert code == 1 and [f["line"] for f in found] == refused
    assert found[0]["message"].startswith("`+trainer.total_epochs=` adds a key the config verl.trainer.main_ppo "
                                          "composes already has (")
    assert "drop the `+`" in found[0]["message"] and found[0]["fix"]["edits"][0]["content"] == ""
    code, _, err = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--no-cache", cwd=tmp_path)
    assert code == 2 and err.strip().endswith(found[0]["message"]), err
    code, _, err = run_cli("fix", "run.sh", "--target", "sm61", "--select", "RLC004", "--no-cache", cwd=tmp_path)
    assert code == 0, err
    assert (tmp_path / "run.sh").read_text().splitlines()[0] == f"{ENTRY} trainer.total_epochs=2"
    code, out, err = run_cli("verify", installed_verl_091, "--load-check", "--script", str(tmp_path / "run.sh"),
                             "--output-format", "json", cwd=tmp_path)
    assert code == 0, (out, err)


def test_a_plus_for_a_key_a_pinned_release_sets_is_judged_by_its_knowledge(monkeypatch):
    """No package on disk: a `[[setting]]` row whose default the YAML writes (rollout.yaml:43, bfloat16) proves
    the key is held; a null or `???` default proves nothing against `+`, nor a key of another trainer's config."""
    from rlcompat.analysis import run_package

    monkeypatch.setattr(run_package, "installed_package", lambda: None)
    text = (f"{ENTRY} +actor_rollout_ref.rollout.dtype=float16 +actor_rollout_ref.rollout.name=hf "
            "+actor_rollout_ref.rollout.quantization=fp8 +model.use_liger=True\n")  # the last: the SFT trainer's key
    checker = Checker(resolve_target("sm61"), Options(select=("RLC004",)), identity=pinned({"verl": "0.9.1"}))
    [finding] = checker.check_source(decode("run.sh", text.encode(), "shell"), "shell").findings
    assert "`+actor_rollout_ref.rollout.dtype=`" in finding.message and "rollout.yaml:43" in finding.message
    assert finding.fix is not None and text[finding.fix.edits[0].start] == "+"


REFUSED = f"{ENTRY} critic.model.fsdp_config.param_offload=True +trainer.total_epochs=2"
NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": [f"!{REFUSED}\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("name, text, line", [
    ("Dockerfile", f"FROM python:3.11\nRUN pip install -U pip && \\\n    {REFUSED}\n", 3),
    ("README.md", f"# Train\n\n```bash\n{REFUSED}\n```\n", 4),
    ("Makefile", f"train:\n\t{REFUSED}\n", 2),
    ("train.slurm", f"#!/bin/bash\n#SBATCH -N 1\nsrun {REFUSED}\n", 3),
    ("train.sbatch", f"#!/bin/bash\n#SBATCH -N 1\n{REFUSED}\n", 3),
    ("train_job", f"#!/bin/bash\n#SBATCH -N 1\n{REFUSED}\n", 3),
    ("train.ipynb", NOTEBOOK, 1),
])
def test_a_launch_command_is_judged_wherever_the_shell_front_end_reads_commands(installed_verl_091, run_cli,
                                                                                tmp_path, name, text, line):
    """A Dockerfile's RUN, a Markdown shell block, a Makefile recipe, a job file (by extension or by its #SBATCH
    directives) and a notebook's `!` line hold launch commands as a script does: the same two refusals are
    reported there (a Dockerfile and Markdown drew nothing: the rule read the shell language only), and `fix`
    edits the file itself."""
    (tmp_path / name).write_text(text)
    code, found = _rlc004(run_cli, tmp_path / name, tmp_path)
    assert code == 1 and [(f["line"], f["message"].split("`")[1]) for f in found] == \
        [(line, "critic.model.fsdp_config.param_offload"), (line, "+trainer.total_epochs=")], found
    code, _, err = run_cli("fix", name, "--target", "sm61", "--select", "RLC004", "--no-cache", cwd=tmp_path)
    assert code == 0, err
    fixed = (tmp_path / name).read_text()
    assert "critic.fsdp.param_offload=True trainer.total_epochs=2" in fixed, fixed
    assert _rlc004(run_cli, tmp_path / name, tmp_path) == (0, [])


def test_a_dockerfile_that_installs_another_release_is_judged_by_that_release(installed_verl_091, run_cli, tmp_path):
    """The image's verl is the one the Dockerfile pins (0.7.0 has critic.model.fsdp_config), not the one installed
    here: nothing is judged against 0.9.1's config."""
    (tmp_path / "Dockerfile").write_text(f"FROM python:3.11\nRUN pip install verl==0.7.0\nRUN {REFUSED}\n")
    assert _rlc004(run_cli, tmp_path / "Dockerfile", tmp_path) == (0, [])


def test_a_plus_over_a_mapping_is_reported_without_a_fix(installed_verl_091, run_cli, tmp_path):
    """`+actor_rollout_ref.rollout=1`: Hydra refuses it (the load check says so), and dropping the `+` would replace
    the rollout's whole mapping with a number, so no fix is offered."""
    (tmp_path / "run.sh").write_text(f"{ENTRY} +actor_rollout_ref.rollout=1\n")
    code, out, _ = run_cli("verify", installed_verl_091, "--load-check", "--script", str(tmp_path / "run.sh"),
                           "--output-format", "json", cwd=tmp_path)
    [command] = json.loads(out)["commands"]
    assert code == 1 and "Could not append to config" in command["error"], out
    code, [found] = _rlc004(run_cli, tmp_path / "run.sh", tmp_path)
    assert code == 1 and "has a mapping" in found["message"] and found["fix"] is None
