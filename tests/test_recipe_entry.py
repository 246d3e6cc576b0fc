"""A verl recipe's entry point (`python3 -m recipe.dapo.main_dapo`, rlcompat/analysis/recipe_entry.py): its own Hydra
config composes the package's ppo_trainer, and its module maps the roles to the package's workers, so its run
reaches what a main_ppo run reaches; a recipe config that is a trainer config of its own carries the tables' findings.
"""

from __future__ import annotations

import json

import pytest

from rlcompat.analysis import recipe_entry
from tests.test_launch_path import FORK_MIXED, FORK_PPO_TRAINER
from tests.verl_trees import verl_package

RECIPE_CONFIG = """hydra:
  searchpath:
    - file://verl/trainer/config

defaults:
  - ppo_trainer
  - _self_

trainer:
  project_name: verl-dapo
"""
RECIPE_MAIN = """import hydra


@hydra.main(config_path="config", config_name="dapo_trainer", version_base=None)
def main(config):
    from verl.workers.fsdp_workers import ActorRolloutRefWorker, CriticWorker
    role_worker_mapping = {Role.ActorRollout: ray.remote(ActorRolloutRefWorker), Role.Critic: ray.remote(CriticWorker)}
"""
LAUNCH = "ray job submit --working-dir \"${PWD}\" -- python3 -m recipe.dapo.main_dapo \\\n    OVERRIDES\n"


def _tree(tmp_path, main=RECIPE_MAIN, recipe_config=RECIPE_CONFIG, rollout="vllm", version="0.4.0"):
    config = (FORK_PPO_TRAINER.replace("ESTIMATOR", "gae").replace("REF_TABLE", "      param_offload: False")
              .replace("name: hf", f"name: {rollout}"))
    verl_package(tmp_path, version, {"trainer/config/ppo_trainer.yaml": config, "trainer/main_ppo.py": "pass\n",
                                     "workers/fsdp_workers.py": "import torch\n" + FORK_MIXED})
    (tmp_path / "recipe" / "dapo" / "config").mkdir(parents=True)
    (tmp_path / "recipe" / "dapo" / "main_dapo.py").write_text(main)
    (tmp_path / "recipe" / "dapo" / "config" / "dapo_trainer.yaml").write_text(recipe_config)
    return tmp_path


def _scan(run_cli, cwd, *paths):
    code, out, err = run_cli("scan", *paths, "--target", "sm61", "--output-format", "json", "--no-cache", cwd=cwd)
    assert code in (0, 1), err
    return json.loads(out)["findings"]


def _at(findings, name="run.sh"):
    return [f for f in findings if f["path"].endswith(name)]


@pytest.mark.parametrize("overrides,critic", [("data.train_batch_size=32", True),
                                              ("algorithm.adv_estimator=grpo", False)])
def test_a_recipe_command_reaches_the_packages_workers_with_its_composed_config_deciding(
        run_cli, tmp_path, fresh_verl_detection, overrides, critic):
    tree = _tree(tmp_path)
    (tree / "run.sh").write_text(LAUNCH.replace("OVERRIDES", overrides))
    found = _at(_scan(run_cli, tree, "run.sh"))
    lines = {f["message"].split("fsdp_workers.py:")[1].split(" ")[0] for f in found if f["code"] == "RLC201"}
    assert lines == ({"12", "17"} if critic else {"12"})  # the actor's model, and the critic's under gae only
    engine = [f for f in found if f["code"] == "RLC401"]
    assert engine and "ppo_trainer.yaml" in engine[0]["message"]  # composed from ppo_trainer through the recipe


def test_a_recipe_command_that_overrides_the_engine_is_not_told_the_composed_one(run_cli, tmp_path,
                                                                                 fresh_verl_detection):
    tree = _tree(tmp_path)
    (tree / "run.sh").write_text(LAUNCH.replace("OVERRIDES", "actor_rollout_ref.rollout.name=hf"))
    assert not [f for f in _at(_scan(run_cli, tree, "run.sh")) if f["code"] == "RLC401"]


def test_a_recipe_that_maps_roles_to_its_own_classes_reaches_no_row_of_the_package(run_cli, tmp_path,
                                                                                  fresh_verl_detection):
    """recipe/spin's layout: `from recipe.spin.fsdp_workers import SPINRolloutRefWorker`; no row describes that
    class, so nothing of the package's worker code is claimed (the composed config's values still are)."""
    tree = _tree(tmp_path, RECIPE_MAIN.replace("from verl.workers.fsdp_workers", "from recipe.dapo.own_workers"))
    (tree / "run.sh").write_text(LAUNCH.replace("OVERRIDES", "data.train_batch_size=32"))
    found = _at(_scan(run_cli, tree, "run.sh"))
    assert not [f for f in found if f["code"] == "RLC201"] and [f for f in found if f["code"] == "RLC401"]


def test_a_module_no_recipe_folder_holds_is_no_recipe_run(tmp_path, fresh_verl_detection):
    tree = _tree(tmp_path)
    package = str(tree / "verl")
    prefixes = ("verl.", "recipe.")
    run_config = str(tree / "verl" / "trainer" / "config" / "ppo_trainer.yaml")
    found = recipe_entry.recipe_run(package, prefixes, run_config, "recipe.dapo.main_dapo")
    assert found is not None and found.values["actor_rollout_ref.rollout.name"] == "vllm"
    assert found.values["trainer.project_name"] == "verl-dapo"
    assert recipe_entry.recipe_run(package, prefixes, run_config, "recipe.other.main_other") is None
    assert recipe_entry.recipe_run(package, ("verl.",), run_config, "recipe.dapo.main_dapo") is None
    assert recipe_entry.recipe_run(package, prefixes, run_config, "recipe/dapo/main_dapo.py") is not None


def test_a_recipe_config_composing_no_trainer_config_is_no_recipe_run(tmp_path, fresh_verl_detection):
    tree = _tree(tmp_path, recipe_config="data:\n  path: x\n")
    run_config = str(tree / "verl" / "trainer" / "config" / "ppo_trainer.yaml")
    assert recipe_entry.recipe_run(str(tree / "verl"), ("verl.", "recipe."), run_config, "recipe.dapo.main_dapo") is None


def test_a_recipes_own_trainer_config_carries_what_the_packages_code_writes_for_its_tables(run_cli, tmp_path,
                                                                                         fresh_verl_detection):
    """A recipe config that is a trainer config of its own (its `actor_rollout_ref`) stands for the same workers as
    ppo_trainer.yaml: the hard-coded FlashAttention-2 and bf16 param dtype are told on its tables; the same file
    that no recipe entry point composes is not."""
    full = FORK_PPO_TRAINER.replace("ESTIMATOR", "gae").replace("REF_TABLE", "      param_offload: False")
    tree = _tree(tmp_path, recipe_config=full)
    (tree / "recipe" / "dapo" / "config" / "unused.yaml").write_text(full)
    told = {}
    for name in ("recipe/dapo/config/dapo_trainer.yaml", "recipe/dapo/config/unused.yaml"):
        told[name] = {(f["code"], f["line"]) for f in _scan(run_cli, tree, name) if "code decides it" in f["message"]}
    assert {("RLC201", 4), ("RLC101", 7), ("RLC201", 16)} <= told["recipe/dapo/config/dapo_trainer.yaml"]
    assert not told["recipe/dapo/config/unused.yaml"]


def test_a_recipe_commands_config_flags_choose_the_config_it_composes(run_cli, tmp_path, fresh_verl_detection):
    """`--config-name` replaces the decorator's config (Hydra's flags): an own config that sets the engine to hf
    leaves no vLLM finding; a config name written with a shell variable leaves the config unknown: no claim."""
    tree = _tree(tmp_path)
    (tree / "recipe" / "dapo" / "config" / "hf_trainer.yaml").write_text(
        RECIPE_CONFIG + "actor_rollout_ref:\n  rollout:\n    name: hf\n")
    for flag, engine in (("", True), ("--config-name=hf_trainer", False), ("--config-name=$NAME", False)):
        (tree / "run.sh").write_text(LAUNCH.replace("OVERRIDES", f"{flag} data.train_batch_size=32"))
        found = _at(_scan(run_cli, tree, "run.sh"))
        assert bool([f for f in found if f["code"] == "RLC401"]) is engine, flag
    assert recipe_entry.recipe_run(str(tree / "verl"), ("verl.", "recipe."),
                                   str(tree / "verl" / "trainer" / "config" / "ppo_trainer.yaml"),
                                   "recipe.dapo.main_dapo", None).config.endswith("dapo_trainer.yaml")


@pytest.mark.parametrize("own", [True, False])
def test_an_exact_releases_own_config_is_read_at_a_recipe_command_as_at_a_main_ppo_one(run_cli, tmp_path,
                                                                                     fresh_verl_detection, own):
    """verl 0.4.1 exactly: the release's defaults are the rules' to read from its knowledge (as for main_ppo), so
    its ppo_trainer.yaml is not read again through the recipe; the recipe's own file still is."""
    extra = "actor_rollout_ref:\n  rollout:\n    name: vllm\n" if own else ""
    tree = _tree(tmp_path, version="0.4.1", recipe_config=RECIPE_CONFIG + extra)
    (tree / "run.sh").write_text(LAUNCH.replace("OVERRIDES", "data.train_batch_size=32"))
    composed = [f for f in _at(_scan(run_cli, tree, "run.sh")) if "this run composes" in f["message"]]
    assert [f["message"].split(":")[0] for f in composed] == (["this run composes recipe/dapo/config/dapo_trainer.yaml"]
                                                               if own else [])
