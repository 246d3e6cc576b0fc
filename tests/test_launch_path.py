"""A launch script is never clean while the run it launches cannot start (issue 27 item 2, issue 26 item 4): what a
verl command's run reaches in the verl it runs (rlcompat/analysis/launch_path.py, `[[run_option]]` `code` and `when`) is
reported at the command, with the framework's file:line and what fixes it; a fork's own config is read for the keys
the command leaves to it."""

from __future__ import annotations

import json
import shutil
from importlib import metadata
from pathlib import Path

import pytest

from rlcompat.analysis import run_package, run_scope
from rlcompat.knowledge import verl_config
from tests.verl_trees import verl_package

MODEL_PY = '''from transformers import AutoModelForTokenClassification


def load_valuehead_model(local_path, torch_dtype, model_config, trust_remote_code):
    return AutoModelForTokenClassification.from_pretrained(
        local_path,
        torch_dtype=torch_dtype,
        config=model_config,
        attn_implementation="flash_attention_2",
    )


def load_reward_model(local_path):
    return AutoModelForTokenClassification.from_pretrained(local_path, attn_implementation="flash_attention_2")
'''
VALUE_HEAD_LINE = 9  # the FA2 keyword inside load_valuehead_model; line 14 is in a function no option reaches

COMMAND = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.name=hf \\\n    {overrides}\n"


@pytest.fixture
def tree(tmp_path, fresh_verl_detection):
    verl_package(tmp_path, "0.9.1", {"utils/model.py": MODEL_PY, "trainer/main_ppo.py": "def main():\n    pass\n"})
    return tmp_path


def _script(tree: Path, overrides: str, name: str = "run.sh") -> Path:
    path = tree / name
    path.write_text("#!/bin/bash\n" + COMMAND.format(overrides=overrides))
    return path


def _scan(run_cli, path, *extra):
    code, out, err = run_cli("scan", str(path), "--target", "sm61", "--output-format", "json", "--no-cache", *extra,
                             cwd=path.parent if path.is_file() else path)
    assert code in (0, 1), err
    return code, json.loads(out)["findings"]


def _at_command(findings, script="run.sh"):
    return [f for f in findings if f["path"].endswith(script) and "this run" in f["message"]]


def test_a_critic_run_reports_the_value_head_loader_at_its_command(run_cli, tree):
    code, findings = _scan(run_cli, _script(tree, "algorithm.adv_estimator=gae"))
    [hit] = _at_command(findings)
    assert code == 1 and hit["code"] == "RLC201" and hit["line"] == 2 and hit["fix"] is None
    assert f"verl/utils/model.py:{VALUE_HEAD_LINE} (load_valuehead_model)" in hit["message"]
    assert "rlcompat fix verl/utils/model.py --target sm61" in hit["message"]
    assert "algorithm.adv_estimator=grpo" in hit["message"]  # the way around it, from the knowledge's `avoid`
    code, out, _ = run_cli("scan", "run.sh", "--target", "sm61", "--no-cache", cwd=tree)
    assert code == 1 and "All clear" not in out


@pytest.mark.parametrize("overrides,reached", [
    ("algorithm.adv_estimator=grpo", False),
    ("algorithm.adv_estimator=grpo critic.enable=True", True),
    ("algorithm.adv_estimator=gae critic.enable=False", False),
    ("algorithm.adv_estimator=gae model_engine=megatron", False),
    ("critic.strategy=fsdp2", True),  # gae is verl's default
    ("algorithm.adv_estimator=$ADV", False),  # a value the script cannot tell: no claim
])
def test_what_the_command_selects_decides(run_cli, tree, overrides, reached):
    _, findings = _scan(run_cli, _script(tree, overrides.replace(" ", " \\\n    ")))
    assert bool(_at_command(findings)) is reached, overrides


def test_fixing_the_framework_file_clears_the_command_and_ignore_silences_it(run_cli, tree):
    script = _script(tree, "algorithm.adv_estimator=gae")
    _, findings = _scan(run_cli, script, "--ignore", "RLC201")
    assert _at_command(findings) == []
    # A suppression after the command's last line silences it, and is not called unused (RLC001).
    script.write_text(script.read_text().rstrip("\n") + "  # rlcompat: ignore[RLC201] value head checked by hand\n")
    _, findings = _scan(run_cli, script)
    assert _at_command(findings) == [] and not [f for f in findings if f["code"] == "RLC001"]
    _script(tree, "algorithm.adv_estimator=gae")
    code, out, _ = run_cli("fix", "run.sh", "--target", "sm61", "--unsafe-fixes", "--no-cache", cwd=tree)
    assert code == 1 and "2 remaining" not in out and "1 remaining" in out, out  # what the script's overrides fix
    code, out, _ = run_cli("fix", "verl/utils/model.py", "--target", "sm61", cwd=tree)
    assert code == 0, out
    assert 'attn_implementation="sdpa"' in (tree / "verl" / "utils" / "model.py").read_text()
    code, out, _ = run_cli("scan", "run.sh", "--target", "sm61", "--no-cache", cwd=tree)
    assert code == 0 and "All clear" in out, out


def test_a_scan_of_the_tree_reports_the_framework_file_where_it_is_not_twice(run_cli, tree):
    _script(tree, "algorithm.adv_estimator=gae")
    _, findings = _scan(run_cli, tree)
    assert _at_command(findings) == []
    assert [f["line"] for f in findings if f["path"].endswith("model.py") and f["code"] == "RLC201"] == [VALUE_HEAD_LINE, 14]


FORK_CONFIG = """actor_rollout_ref:
  model:
    path: ~/models/deepseek-llm-7b-chat
  rollout:
    name: vllm
    gpu_memory_utilization: 0.5
algorithm:
  adv_estimator: grpo
"""


def test_a_forks_own_config_selecting_vllm_is_never_nothing_remaining(run_cli, tmp_path, fresh_verl_detection):
    verl_package(tmp_path, "0.1", {"trainer/config/ppo_trainer.yaml": FORK_CONFIG, "trainer/main_ppo.py": "pass\n"})
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "train.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=32\n")
    code, out, _ = run_cli("fix", "scripts/train.sh", "--target", "sm61", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert code == 1 and "nothing remaining" not in out and "verl fork" in out, out
    _, findings = _scan(run_cli, script)
    [hit] = _at_command(findings, "train.sh")
    assert hit["code"] == "RLC401" and hit["line"] == 2
    assert "verl/trainer/config/ppo_trainer.yaml:5" in hit["message"] and "actor_rollout_ref.rollout.name" in hit["message"]
    # The command overriding the key decides instead of the fork's config.
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=hf\n")
    code, out, _ = run_cli("scan", "scripts/train.sh", "--target", "sm61", "--no-cache", cwd=tmp_path)
    assert code == 0 and "All clear" in out, out


FORK_WORKERS = """from transformers import AutoModelForCausalLM, AutoModelForTokenClassification


class ActorRolloutRefWorker:
    def _build_model_optimizer(self, path):
        return AutoModelForCausalLM.from_pretrained(path, attn_implementation='flash_attention_2')


class CriticWorker:
    def _build_critic_model_optimizer(self, config):
        return AutoModelForTokenClassification.from_pretrained(config.path, attn_implementation='flash_attention_2')
"""


@pytest.mark.parametrize("estimator,critic", [("gae", True), ("grpo", False)])
def test_a_forks_model_code_on_the_run_is_read_with_its_own_config_deciding(run_cli, tmp_path, fresh_verl_detection,
                                                                          estimator, critic):
    """A verl 0.1-style fork: its own workers hard-code FlashAttention-2 (as verl 0.4.1, its closest release, does in
    the same functions), and its own ppo_trainer.yaml says whether a critic is trained."""
    config = FORK_CONFIG.replace("name: vllm", "name: hf").replace("grpo", estimator)
    verl_package(tmp_path, "0.1", {"trainer/config/ppo_trainer.yaml": config, "trainer/main_ppo.py": "pass\n",
                                   "workers/fsdp_workers.py": FORK_WORKERS})
    script = tmp_path / "train.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=32\n")
    _, findings = _scan(run_cli, script)
    hits = _at_command(findings, "train.sh")
    assert {f["message"].split("fsdp_workers.py:")[1].split(" ")[0] for f in hits} == ({"6", "11"} if critic else {"6"})
    assert all("as in verl 0.4.1, the closest release" in f["message"] for f in hits)


FORK_PPO_TRAINER = """actor_rollout_ref:
  model:
    path: ~/models/deepseek-llm-7b-chat
    override_config: {}
  actor:
    strategy: fsdp
    fsdp_config:
      param_offload: False
  ref:
    fsdp_config:
REF_TABLE
  rollout:
    name: hf
critic:
  model:
    override_config: {}
    fsdp_config:
      param_offload: False
algorithm:
  adv_estimator: ESTIMATOR
"""
FORK_MIXED = FORK_WORKERS.replace(
    "        return AutoModelForCausalLM",
    "        mp = fsdp_config.get('mixed_precision', None)\n"
    "        if mp is not None:\n"
    "            param_dtype = mp.get('param_dtype', 'bf16')\n"
    "        else:\n"
    "            param_dtype = torch.bfloat16\n"
    "        return AutoModelForCausalLM")


@pytest.mark.parametrize("estimator,critic", [("gae", True), ("grpo", False)])
def test_a_forks_scanned_config_carries_what_its_code_writes_for_each_table(run_cli, tmp_path, fresh_verl_detection,
                                                                          estimator, critic):
    """Scanning a fork's own ppo_trainer.yaml: the hazards its workers write themselves for the models the config's
    tables stand for are reported on those tables (`override_config` for the hard-coded FlashAttention-2, an
    `fsdp_config` without `mixed_precision` for the bf16 param dtype), citing the fork's own file:line; a table that
    sets `mixed_precision` is the code's input and is judged where it is written; the critic only where the config
    trains one."""
    config = FORK_PPO_TRAINER.replace("ESTIMATOR", estimator).replace(
        "REF_TABLE", "      mixed_precision:\n        param_dtype: fp32")
    package = verl_package(tmp_path, "0.1", {"trainer/config/ppo_trainer.yaml": config, "trainer/main_ppo.py": "pass\n",
                                             "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED})
    _, findings = _scan(run_cli, package / "trainer" / "config" / "ppo_trainer.yaml")
    told = {(f["code"], f["line"]) for f in findings if "the fork's code decides it" in f["message"]}
    expected = {("RLC201", 4), ("RLC101", 7)} | ({("RLC201", 17)} if critic else set())
    assert told == expected, findings
    fa2 = next(f for f in findings if (f["code"], f["line"]) == ("RLC201", 4))
    assert "verl/workers/fsdp_workers.py:12 (ActorRolloutRefWorker._build_model_optimizer)" in fa2["message"]
    assert "0.4.1" not in fa2["message"]  # the fork's own line, never the closest release's


def test_a_forks_own_entry_config_carries_what_its_code_writes_as_the_primary_config_does(run_cli, tmp_path,
                                                                                          fresh_verl_detection):
    """A fork's own entry point (`@hydra.main(config_path="config", config_name="mix_ppo_trainer")` in
    `mix_src/main_mix_ppo.py`, the layout of LUFFY-style forks) composes its own copy of the trainer config: its
    tables stand for the same worker code, so they carry the same findings as trainer/config/ppo_trainer.yaml's; a
    YAML file no entry point composes does not."""
    config = FORK_PPO_TRAINER.replace("ESTIMATOR", "gae").replace("REF_TABLE", "      param_offload: False")
    package = verl_package(tmp_path, "0.1", {
        "trainer/config/ppo_trainer.yaml": config, "trainer/main_ppo.py": "pass\n",
        "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED,
        "mix_src/config/mix_ppo_trainer.yaml": config, "mix_src/config/unused.yaml": config,
        "mix_src/main_mix_ppo.py": "import hydra\n\n\n@hydra.main(config_path='config', config_name='mix_ppo_trainer', "
                                   "version_base=None)\ndef main(config):\n    pass\n"})
    told = {}
    for name in ("trainer/config/ppo_trainer.yaml", "mix_src/config/mix_ppo_trainer.yaml", "mix_src/config/unused.yaml"):
        _, findings = _scan(run_cli, package / name)
        told[name] = {(f["code"], f["line"]) for f in findings if "the fork's code decides it" in f["message"]}
    assert told["mix_src/config/mix_ppo_trainer.yaml"] == told["trainer/config/ppo_trainer.yaml"]
    assert ("RLC201", 4) in told["trainer/config/ppo_trainer.yaml"] and not told["mix_src/config/unused.yaml"]


def test_a_hazard_told_on_the_scanned_configs_table_is_not_told_again_at_the_command(run_cli, tmp_path,
                                                                                     fresh_verl_detection):
    config = FORK_PPO_TRAINER.replace("ESTIMATOR", "gae").replace("REF_TABLE", "      param_offload: False")
    verl_package(tmp_path, "0.1", {"trainer/config/ppo_trainer.yaml": config, "trainer/main_ppo.py": "pass\n",
                                   "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED})
    (tmp_path / "train.sh").write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=32\n")
    alone = _at_command(_scan(run_cli, tmp_path / "train.sh")[1], "train.sh")
    assert {f["code"] for f in alone} == {"RLC201"} and len(alone) == 2  # actor and critic, at the command
    code, out, err = run_cli("scan", "train.sh", "verl/trainer/config/ppo_trainer.yaml", "--target", "sm61",
                             "--output-format", "json", "--no-cache", cwd=tmp_path)
    both = json.loads(out)["findings"]
    assert not _at_command(both, "train.sh"), both  # told on the config's tables instead
    assert {(f["code"], f["line"]) for f in both if "the fork's code decides it" in f["message"]} >= {
        ("RLC201", 4), ("RLC201", 16)}


@pytest.mark.parametrize("entry,ref", [("role_worker_mapping[Role.RefPolicy] = ray.remote(Worker)\n", True),
                                       ("# role_worker_mapping[Role.RefPolicy] = ray.remote(Worker)\n", False)])
def test_the_reference_policys_table_counts_only_where_the_entry_point_builds_one(run_cli, tmp_path,
                                                                                 fresh_verl_detection, entry, ref):
    config = FORK_PPO_TRAINER.replace("ESTIMATOR", "grpo").replace("REF_TABLE", "      param_offload: False")
    package = verl_package(tmp_path, "0.1", {"trainer/config/ppo_trainer.yaml": config, "trainer/main_ppo.py": entry,
                                             "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED})
    _, findings = _scan(run_cli, package / "trainer" / "config" / "ppo_trainer.yaml")
    lines = {f["line"] for f in findings if f["code"] == "RLC101" and "the fork's code decides it" in f["message"]}
    assert lines == ({7, 10} if ref else {7})


def test_a_releases_own_config_carries_what_its_own_code_writes(run_cli, tmp_path, fresh_verl_detection):
    """A release whose knowledge has `[[handle]]` rows (verl 0.4.1): its own ppo_trainer.yaml stands for the models
    its own workers load, as a fork's does, so the hard-coded FlashAttention-2 and bf16 param dtype are reported on
    those tables, saying whose code decides (verl-0.4.0, a dev corpus, showed the construct; before, only forks got
    it)."""
    config = FORK_PPO_TRAINER.replace("ESTIMATOR", "gae").replace("REF_TABLE", "      param_offload: False")
    package = verl_package(tmp_path, "0.4.1", {"trainer/config/ppo_trainer.yaml": config,
                                               "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED})
    _, findings = _scan(run_cli, package / "trainer" / "config" / "ppo_trainer.yaml")
    told = {(f["code"], f["line"]) for f in findings if "verl 0.4.1's code decides it" in f["message"]}
    assert told == {("RLC201", 4), ("RLC101", 7), ("RLC101", 10), ("RLC201", 16)}, findings
    assert not [f for f in findings if "the fork's code decides it" in f["message"]]


@pytest.mark.parametrize("kl_loss,ref", [("False", False), ("True", True)])
def test_a_reference_policy_built_only_under_a_test_the_config_fails_has_no_table(run_cli, tmp_path,
                                                                                  fresh_verl_detection, kl_loss, ref):
    """verl 0.4.0 main_ppo.py:130-131 maps Role.RefPolicy only with use_kl_in_reward or use_kl_loss: with both False
    in the config, the reference policy's fsdp_config stands for no model of this run."""
    entry = ("def main_task(config):\n"
             "    if config.algorithm.use_kl_in_reward or config.actor_rollout_ref.actor.use_kl_loss:\n"
             "        role_worker_mapping[Role.RefPolicy] = ray.remote(Worker)\n")
    config = FORK_PPO_TRAINER.replace("ESTIMATOR", "grpo").replace("REF_TABLE", "      param_offload: False")
    config = config.replace("algorithm:\n", "algorithm:\n  use_kl_in_reward: False\n").replace(
        "    fsdp_config:\n      param_offload: False\n  ref:", f"    use_kl_loss: {kl_loss}\n    fsdp_config:\n      param_offload: False\n  ref:")
    package = verl_package(tmp_path, "0.1", {"trainer/config/ppo_trainer.yaml": config, "trainer/main_ppo.py": entry,
                                             "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED})
    _, findings = _scan(run_cli, package / "trainer" / "config" / "ppo_trainer.yaml")
    lines = {f["line"] for f in findings if f["code"] == "RLC101" and "the fork's code decides it" in f["message"]}
    assert lines == ({8, 11} if ref else {8})  # use_kl_loss adds a line above both tables


@pytest.mark.parametrize("kl_loss,ref", [("False", False), ("True", True), ("${KL}", False)])
def test_a_reference_policy_a_scanned_launch_script_builds_has_its_table(run_cli, tmp_path, fresh_verl_detection,
                                                                         kl_loss, ref):
    """The config leaves use_kl_loss off, so its own values build no reference policy; a scanned launch script whose
    command composes that config with `actor_rollout_ref.actor.use_kl_loss=True` builds one (ReCall's train.sh): the
    reference policy's fsdp_config then stands for that model. An override whose value is not known builds none."""
    entry = ("def main_task(config):\n"
             "    if config.algorithm.use_kl_in_reward or config.actor_rollout_ref.actor.use_kl_loss:\n"
             "        role_worker_mapping[Role.RefPolicy] = ray.remote(Worker)\n")
    config = FORK_PPO_TRAINER.replace("ESTIMATOR", "grpo").replace("REF_TABLE", "      param_offload: False")
    config = config.replace("algorithm:\n", "algorithm:\n  use_kl_in_reward: False\n").replace(
        "    fsdp_config:\n      param_offload: False\n  ref:",
        "    use_kl_loss: False\n    fsdp_config:\n      param_offload: False\n  ref:")
    verl_package(tmp_path, "0.1", {"trainer/config/ppo_trainer.yaml": config, "trainer/main_ppo.py": entry,
                                   "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED})
    (tmp_path / "train.sh").write_text(
        f"python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.actor.use_kl_loss={kl_loss}\n")
    code, out, err = run_cli("scan", "train.sh", "verl/trainer/config/ppo_trainer.yaml", "--target", "sm61",
                             "--output-format", "json", "--no-cache", cwd=tmp_path)
    findings = json.loads(out)["findings"]
    told = {f["line"]: f["message"] for f in findings
            if f["code"] == "RLC101" and "the fork's code decides it" in f["message"]}
    assert set(told) == ({8, 11} if ref else {8}), findings
    if ref:
        assert "built by the run train.sh:1 starts" in told[11]
    _, alone = _scan(run_cli, tmp_path / "verl" / "trainer" / "config" / "ppo_trainer.yaml")
    assert {f["line"] for f in alone if f["code"] == "RLC101" and "the fork's code decides it" in f["message"]} == {8}


def test_fork_values_come_from_the_schema_composition(tmp_path, fresh_verl_detection):
    """One reader of a fork's config (rlcompat/schema): its defaults list is followed as Hydra merges it, the file's
    own content last, and `${...}` resolved in the composed config."""
    primary = ("defaults:\n  - algorithm: gae_algo\n  - _self_\n"
               "actor_rollout_ref:\n  actor:\n    strategy: ${critic.strategy}\n  rollout:\n    name: vllm\n"
               "critic:\n  strategy: fsdp\nreward_model:\n  enable: False\n  path: ~\n")
    package = verl_package(tmp_path, "0.1", {"trainer/config/ppo_trainer.yaml": primary,
                                             "trainer/config/algorithm/gae_algo.yaml": "adv_estimator: gae\n"})
    knowledge = verl_config.load_version("0.4.1")
    values = run_package.fork_values(str(package), knowledge)
    assert values["algorithm.adv_estimator"] == "gae"  # from the group file, which a flat read of the primary misses
    assert values["actor_rollout_ref.actor.strategy"] == "fsdp"
    assert values["reward_model.enable"] == "False" and values["reward_model.path"] == "null"
    critic = next(o for o in knowledge.run_options if o.name == "critic")
    assert run_scope.selection(critic, knowledge, {}, values) is not None
    (package / "trainer" / "config" / "algorithm" / "gae_algo.yaml").unlink()
    assert run_package.fork_values(str(package), knowledge) == {}  # unreadable: no claim


def test_selection_reads_the_commands_values_then_the_default_runs():
    knowledge = verl_config.load_version("0.9.1")
    critic = next(o for o in knowledge.run_options if o.name == "critic")
    assert "algorithm.adv_estimator=gae (default)" in run_scope.selection(critic, knowledge, {})
    assert run_scope.selection(critic, knowledge, {"algorithm.adv_estimator": "grpo"}) is None
    assert "critic.enable=TRUE" in run_scope.selection(critic, knowledge, {"algorithm.adv_estimator": "grpo",
                                                                             "critic.enable": "TRUE"})
    assert run_scope.selection(critic, knowledge, {"critic.enable": None}) is None  # unknown: no claim
    assert run_scope.runs_entry(knowledge, "verl.trainer.main_ppo")
    assert run_scope.runs_entry(knowledge, "verl/trainer/main_ppo.py")
    assert not run_scope.runs_entry(knowledge, "verl.trainer.fsdp_sft_trainer")


# --- the installed verl 0.9.1 (issue 27's goal): skipped where it is not installed --------------------------------

try:
    INSTALLED = metadata.version("verl")
except metadata.PackageNotFoundError:
    INSTALLED = None
needs_verl_091 = pytest.mark.skipif(INSTALLED != "0.9.1", reason="needs verl 0.9.1 installed (rlcompat[verl])")

PPO_SCRIPT = """#!/bin/bash
set -x
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=gae \\
    data.train_batch_size=32 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    critic.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    actor_rollout_ref.rollout.name=vllm \\
    trainer.n_gpus_per_node=1
"""


@needs_verl_091
def test_every_code_row_names_a_function_of_the_installed_release():
    for option in verl_config.load_version("0.9.1").run_options:
        for code in option.code:
            relative, _, function = code.partition(":")
            assert run_package.function_lines(str(Path(run_package.installed_package(), relative)), function), code


@needs_verl_091
def test_the_ppo_critic_script_is_all_clear_only_once_the_installed_value_head_loader_is_fixed(
        tmp_path, monkeypatch, fresh_verl_detection):
    """The user's sequence: fix the script, scan it (the installed verl's value-head FA2 is reported at the command
    with its file:line), fix that file, scan again: All clear. The installed package is a copy here."""
    from rlcompat.api import fix_paths, scan_paths
    from rlcompat.config import Options
    from rlcompat.knowledge.targets import resolve_target
    from rlcompat.report import Summary, render

    site = tmp_path / "site"
    shutil.copytree(run_package.installed_package(), site / "verl", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(run_package, "installed_package", lambda: str(site / "verl"))
    model = site / "verl" / "utils" / "model.py"
    start, end = run_package.function_lines(str(model), "load_valuehead_model")
    fa2 = [n for n, line in enumerate(model.read_text().splitlines(), 1)
           if "flash_attention_2" in line and start <= n <= end]
    assert fa2  # the release hard-codes it in the loader (the knowledge's proof)
    (tmp_path / "user").mkdir()
    script = tmp_path / "user" / "run_ppo_p40.sh"
    script.write_text(PPO_SCRIPT)
    sm61 = resolve_target("sm61")
    monkeypatch.chdir(tmp_path)

    def text(report, command):
        findings = report.remaining if command == "fix" else report.findings
        return render("text", Summary(command, sm61, findings, report.errors, 1, fixed=getattr(report, "applied", [])))

    fixed = fix_paths([str(script)], sm61, Options(), unsafe=True, jobs=1)
    assert "rollout.name=hf" in script.read_text()
    hits = [f for f in fixed.remaining if "this run" in f.message]
    assert sorted(int(f.message.split("model.py:")[1].split(" ")[0]) for f in hits) == fa2
    assert all(f.code == "RLC201" and f.location.line == 3 and "rlcompat fix site/verl/utils/model.py" in f.message
               for f in hits)
    # the installed distribution: also the command that keeps a backup (rlcompat/installed/)
    assert all("rlcompat fix --installed verl --target sm61" in f.message for f in hits)
    assert "nothing remaining" not in text(fixed, "fix")
    scanned = scan_paths([str(script)], sm61, Options(), jobs=1)
    assert "All clear" not in text(scanned, "scan")
    fix_paths([str(model)], sm61, Options(), jobs=1)
    scanned = scan_paths([str(script)], sm61, Options(), jobs=1)
    assert scanned.findings == [] and "All clear" in text(scanned, "scan")


def test_matrix_reports_what_scan_reports_at_the_command_parsing_the_framework_file_once(tree, monkeypatch):
    from rlcompat.pipeline import runner
    from rlcompat.api import scan_paths
    from rlcompat.config import Options
    from rlcompat.knowledge.targets import resolve_target
    from rlcompat.pipeline.matrix import run_matrix

    script = _script(tree, "algorithm.adv_estimator=gae")
    targets = [resolve_target("sm61"), resolve_target("sm75")]
    parsed = []
    real = runner.parse
    monkeypatch.setattr(runner, "parse", lambda language, text, file=None: parsed.append(language)
                        or real(language, text, file))
    run = run_matrix([str(script)], targets, Options(), jobs=1)
    assert parsed.count("python") == 1  # verl/utils/model.py, once for both targets
    for i, target in enumerate(targets):
        mine = sorted((f.code, f.location.line, f.message) for f in run.findings(i) if "this run" in f.message)
        scan = scan_paths([str(script)], target, Options(), jobs=1)
        assert mine and mine == sorted((f.code, f.location.line, f.message) for f in scan.findings if "this run" in f.message)
