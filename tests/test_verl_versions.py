"""verl knowledge per version: the scanned tree's verl version picks the rule set, a key is called dead only by
the rule set of that exact version, and the verdict is the same for YAML, launch scripts and Python defaults."""

from __future__ import annotations

import pytest

from rlcompat.knowledge import identity, verl_config as vk
from rlcompat.api import scan_source
from rlcompat.knowledge.targets import resolve_target

SM61 = resolve_target("sm61")
SCRIPT = ("python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n"
          "    actor_rollout_ref.actor.use_torch_compile=False \\\n    trainer.n_gpus_per_node=1\n")
ACTOR_PY = "@dataclass\nclass ActorConfig(BaseConfig):\n    use_torch_compile: bool = True\n"


def _tree(tmp_path, version: str | None, files=()):
    package = tmp_path / "verl"
    (package / "trainer").mkdir(parents=True)
    if version:
        (package / "version").mkdir()
        (package / "version" / "version").write_text(version + "\n")
    for f in files:
        (package / f).parent.mkdir(parents=True, exist_ok=True)
        (package / f).write_text("")
    return package


pytestmark = pytest.mark.usefixtures("fresh_verl_detection")


def test_every_rule_set_loads_and_names_its_proofs():
    assert set(vk.available_versions()) >= {"0.4.1", "0.5.0", "0.6.1", "0.7.0", "0.8.0", "0.9.1"}
    for version in vk.available_versions():
        k = vk.load_version(version)
        assert k.version == version and k.rollout_engines and k.settings
        assert all(":" in s.proof for s in k.settings), version
        assert all(":" in d.proof for d in k.dead.values()), version


def test_actor_use_torch_compile_is_live_in_070_and_dead_in_091():
    assert vk.other_verdicts("actor_rollout_ref.actor.use_torch_compile") == [
        ("0.4.1", "live"), ("0.5.0", "live"), ("0.6.1", "live"), ("0.7.0", "live"), ("0.8.0", "dead"), ("0.9.1", "dead")]


def test_a_070_tree_does_not_call_actor_use_torch_compile_dead(tmp_path):
    package = _tree(tmp_path, "0.7.0")
    found = scan_source(SCRIPT, SM61, str(package / "run.sh"), "shell")
    assert not [f for f in found if f.code == "RLC352"], [f.message for f in found]
    # ... and the FSDP engine key, which 0.7.0's default worker does not read, is the dead one there.
    found = scan_source(SCRIPT.replace("actor.use_torch_compile", "actor.fsdp_config.use_torch_compile"), SM61,
                        str(package / "run.sh"), "shell")
    (dead,) = [f for f in found if f.code == "RLC352"]
    assert "does nothing in verl 0.7.0" in dead.message and "use actor_rollout_ref.actor.use_torch_compile" in dead.message
    # The compile default is added through the key 0.7.0 reads.
    assert any(f.code == "RLC351" and "actor_rollout_ref.actor.use_torch_compile" in f.message
               for f in scan_source(SCRIPT.replace("    actor_rollout_ref.actor.use_torch_compile=False \\\n", ""),
                                    SM61, str(package / "run.sh"), "shell"))


def test_the_engine_worker_of_070_reads_the_fsdp_key(tmp_path):
    package = _tree(tmp_path, "0.7.0")
    script = SCRIPT.replace("actor.use_torch_compile", "actor.fsdp_config.use_torch_compile").replace(
        "trainer.n_gpus", "trainer.use_legacy_worker_impl=disable \\\n    trainer.n_gpus")
    assert not [f for f in scan_source(script, SM61, str(package / "run.sh"), "shell") if f.code == "RLC352"]


def test_a_091_tree_calls_it_dead_with_a_rename(tmp_path):
    package = _tree(tmp_path, "0.9.1")
    (dead,) = [f for f in scan_source(SCRIPT, SM61, str(package / "run.sh"), "shell") if f.code == "RLC352"]
    assert "does nothing in verl 0.9.1" in dead.message and dead.fix is not None


def test_an_unknown_version_makes_no_dead_claim(tmp_path, monkeypatch):
    monkeypatch.setattr(identity, "installed_version", lambda distribution: None)
    (note,) = [f for f in scan_source(SCRIPT, SM61, str(tmp_path / "run.sh"), "shell") if f.code == "RLC352"]
    assert "version was not found" in note.message and "does nothing in verl" not in note.message
    assert "it is read in verl 0.4.1, 0.5.0, 0.6.1, 0.7.0" in note.message and note.fix is None
    # Python: with the version unknown, nobody says the dataclass default does nothing.
    codes = [f.code for f in scan_source(ACTOR_PY, SM61, str(tmp_path / "verl/workers/config/actor.py"))]
    assert "RLC356" not in codes


def test_python_defaults_get_the_yaml_verdict_per_version(tmp_path):
    old = _tree(tmp_path / "a", "0.7.0")
    new = _tree(tmp_path / "b", "0.9.1")
    old_codes = [f.code for f in scan_source(ACTOR_PY, SM61, str(old / "workers/config/actor.py"))]
    new_codes = [f.code for f in scan_source(ACTOR_PY, SM61, str(new / "workers/config/actor.py"))]
    assert old_codes == ["RLC306"]  # read by 0.7.0's dp_actor.py:82: the default is live, and fixed
    assert new_codes == ["RLC356"]  # declared, never read in 0.9.1: reported, not "fixed"


def test_version_from_distinguishing_files_when_the_version_file_is_gone(tmp_path):
    package = _tree(tmp_path, None, ["workers/engine_workers.py", "workers/fsdp_workers.py",
                                     "trainer/config/model/hf_model.yaml"])
    assert _found(package) == ("release", "0.7.0")
    older = _tree(tmp_path / "o", None, ["workers/fsdp_workers.py", "workers/config/x.py",
                                         "trainer/config/model/hf_model.yaml", "workers/roles/x.py"])
    assert _found(older) == ("release", "0.6.1")
    newer = _tree(tmp_path / "n", None, ["workers/engine_workers.py", "trainer/config/reward/reward.yaml",
                                         "trainer/config/transfer_queue/x.yaml"])
    assert _found(newer) == ("release", "0.9.1")


def _found(package) -> tuple[str, str | None]:
    """How the identity of a verl package is found from its files, and the release they match."""
    found = identity.verl_package(str(package))
    return found.how, found.version


def test_verl_05_registers_an_hf_rollout_that_runs_everywhere(tmp_path):
    package = _tree(tmp_path, "0.5.0")
    script = SCRIPT.replace("algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.name=vllm")
    (engine,) = [f for f in scan_source(script, SM61, str(package / "run.sh"), "shell") if f.code == "RLC401"]
    assert "use hf (actor_rollout_ref.rollout.name=hf)" in engine.message


def test_missed_verl_launch_keys(tmp_path):
    package = _tree(tmp_path, "0.9.1")
    script = ("python3 -m verl.trainer.main_ppo \\\n    +actor_rollout_ref.actor.fsdp_config.model_dtype=bfloat16 \\\n"
              "    reward_model.rollout.name=vllm \\\n    trainer.n_gpus_per_node=1\n")
    found = scan_source(script, SM61, str(package / "run.sh"), "shell")
    by_line = {(f.code, f.location.line) for f in found}
    assert ("RLC119", 2) in by_line and ("RLC401", 3) in by_line
    (dtype,) = [f for f in found if f.code == "RLC119"]
    assert [e.content for e in dtype.fix.edits] == ["float32"]
    sft = "torchrun -m verl.trainer.sft_trainer model.use_liger=True\n"
    (liger,) = [f for f in scan_source(sft, SM61, str(package / "sft.sh"), "shell") if f.code == "RLC354"]
    assert [e.content for e in liger.fix.edits] == ["False"]
