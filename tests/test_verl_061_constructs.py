"""What verl 0.6.1's trainer configs needed (issue 13, the verl-0.6.1 coverage corpus): the Megatron engine's
settings, main_generation's rollout engine, a role that follows another through `oc.select` in verl's own files,
the SFT engine trainer's `engine` block, and a key verl's own file leaves out of the mapping that would carry it.
Each test builds a small verl 0.6.1 package (its version file and the config files the test needs)."""

from __future__ import annotations

import pytest

from rlcompat.api import fix_paths, scan_paths, scan_source
from rlcompat.knowledge.targets import resolve_target
from tests.verl_trees import verl_package

SM61, SM75, SM80 = resolve_target("sm61"), resolve_target("sm75"), resolve_target("sm80")


pytestmark = pytest.mark.usefixtures("fresh_verl_detection")


def _package(tmp_path, files: dict[str, str], version: str = "0.6.1"):
    return verl_package(tmp_path, version, {f"trainer/config/{name}": text for name, text in files.items()})


def _found(package, target):
    return [(f.path.split("config/")[-1], f.location.line, f.code) for f in scan_paths([str(package)], target).findings]


def test_megatron_engine_settings_once_per_line(tmp_path):
    package = _package(tmp_path, {"engine/megatron.yaml": (
        "override_transformer_config:\n  attention_backend: flash\ndtype: bfloat16 # [\"bfloat16\", \"float16\"]\n")})
    found = _found(package, SM75)
    # engine/megatron.yaml is mounted for the actor, the ref and the critic: one finding per line, not per role
    assert found.count(("engine/megatron.yaml", 2, "RLC204")) == 1
    assert found.count(("engine/megatron.yaml", 3, "RLC120")) == 1
    assert not _found(package, SM80)


def test_main_generation_rollout_engine(tmp_path):
    package = _package(tmp_path, {"generation.yaml": "rollout:\n  name: vllm\n  dtype: bfloat16\n"})
    assert ("generation.yaml", 2, "RLC401") in _found(package, SM61)
    assert "RLC401" not in [code for _, _, code in _found(package, SM75)]  # vLLM runs on a T4 (fp16)


def test_ref_following_the_actor_is_judged_at_the_actors_line(tmp_path):
    ref = "use_torch_compile: ${oc.select:actor_rollout_ref.actor.use_torch_compile,true}\n"
    package = _package(tmp_path, {"ref/ref.yaml": ref, "actor/actor.yaml": "use_torch_compile: true\n"})
    found = _found(package, SM61)
    assert ("actor/actor.yaml", 1, "RLC351") in found
    assert not [f for f in found if f[0] == "ref/ref.yaml"]  # the fallback never applies in verl's own configs
    fix_paths([str(package)], SM61)
    assert (package / "trainer/config/ref/ref.yaml").read_text() == ref
    assert (package / "trainer/config/actor/actor.yaml").read_text() == "use_torch_compile: false\n"
    # A file verl does not mount (a user's own config beside this verl 0.6.1 package): the fallback is what applies
    # while the followed key is unset there, so it is judged.
    user = "actor_rollout_ref:\n  ref:\n    " + ref
    found = scan_source(user, SM61, str(tmp_path / "my_config.yaml"), "yaml")
    assert [(f.code, f.location.line) for f in found] == [("RLC351", 3)]


def test_sft_engine_trainer_compiles_on_the_engine_block(tmp_path):
    # engine/fsdp.yaml is the PPO actor's fsdp_config (dead there for 0.6.1's default legacy worker) and the SFT
    # engine trainer's `engine` (read: transformer_impl.py:129-133): a live line, named by its live key.
    package = _package(tmp_path, {"engine/fsdp.yaml": "use_torch_compile: true\nstrategy: fsdp\n"})
    (finding,) = scan_paths([str(package)], SM61).findings
    assert (finding.code, finding.location.line) == ("RLC351", 1)
    assert finding.message.startswith("engine.use_torch_compile (this file is also mounted at actor_rollout_ref.")
    assert not scan_paths([str(package)], SM75).findings  # Inductor runs on sm70+
    sft = "torchrun -m verl.trainer.sft_trainer model.path=Qwen/Qwen2.5-0.5B engine.use_torch_compile=True\n"
    found = scan_source(sft, SM61, str(package / "run.sh"), "shell")
    assert [(f.code, f.fix.edits[0].content) for f in found] == [("RLC351", "False")]
    # A PPO command gets no SFT key added; its own compile switch is still added as before.
    ppo = "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo trainer.n_gpus_per_node=1\n"
    added = [e.content for f in scan_source(ppo, SM61, str(package / "run.sh"), "shell") if f.fix for e in f.fix.edits]
    assert not [a for a in added if "engine.use_torch_compile" in a]
    assert [a for a in added if "actor_rollout_ref.actor.use_torch_compile=False" in a]


def test_a_key_verl_leaves_out_of_its_own_mapping(tmp_path):
    package = _package(tmp_path, {
        "model/hf_model.yaml": "path: ~/models/x\n\n# override hf config\noverride_config: {}\n\nuse_liger: False\n",
        "critic/critic.yaml": "strategy: ???\nmodel:\n  path: ~/models/x\n  override_config: {}\n",
    })
    findings = {(f.path.split("config/")[-1], f.location.line, f.code): f for f in scan_paths([str(package)], SM75).findings}
    actor = findings.pop(("model/hf_model.yaml", 4, "RLC204"))
    critic = findings.pop(("critic/critic.yaml", 4, "RLC204"))
    assert not findings
    assert "does not set attn_implementation, so verl 0.6.1 uses its default, verl/workers/fsdp_workers.py:318" in actor.message
    assert critic.message.startswith("critic.model.override_config.attn_implementation is flash_attention_2")
    assert not scan_paths([str(package)], SM80).findings
    fix_paths([str(package)], SM75)
    assert (package / "trainer/config/model/hf_model.yaml").read_text().count("override_config: {attn_implementation: sdpa}\n") == 1
    assert (package / "trainer/config/critic/critic.yaml").read_text().endswith("  override_config: {attn_implementation: sdpa}\n")
    assert not scan_paths([str(package)], SM75).findings


def test_a_left_out_key_is_judged_only_in_verls_own_file_of_a_version_that_proves_it(tmp_path):
    block = "override_config:\n  rope_scaling: null\n"
    package = _package(tmp_path, {"model/hf_model.yaml": block})
    (finding,) = scan_paths([str(package)], SM61).findings
    fix_paths([str(package)], SM61)  # a block mapping: a line of its own, at its keys' indentation
    assert (package / "trainer/config/model/hf_model.yaml").read_text() == block + "  attn_implementation: sdpa\n"
    # Set in the file: the value is judged where it is written, once.
    package = _package(tmp_path / "set", {"model/hf_model.yaml": "override_config:\n  attn_implementation: flash_attention_2\n"})
    assert [(f.code, f.location.line) for f in scan_paths([str(package)], SM61).findings] == [("RLC204", 2)]
    # A user's config (not verl's own file) with an empty mapping: nothing is claimed.
    user = "actor_rollout_ref:\n  model:\n    override_config: {}\n"
    assert not scan_source(user, SM61, str(tmp_path / "my_config.yaml"), "yaml")
    # verl 0.9.1's rule set proves no such omission: its hf_model.yaml is not judged by this.
    newer = tmp_path / "v091" / "verl"
    (newer / "version").mkdir(parents=True)
    (newer / "version" / "version").write_text("0.9.1\n")
    (newer / "trainer" / "config" / "model").mkdir(parents=True)
    (newer / "trainer" / "config" / "model" / "hf_model.yaml").write_text("override_config: {}\n")
    assert not scan_paths([str(newer)], SM61).findings


def test_verl_070_has_the_same_constructs(tmp_path):
    # 0.7.0's configs and code paths are 0.6.1's (its own lines): the same rows, proven in its sdist.
    package = _package(tmp_path, {
        "model/hf_model.yaml": "override_config: {}\n",
        "engine/fsdp.yaml": "use_torch_compile: true\nstrategy: fsdp\n",
        "ref/ref.yaml": "use_torch_compile: ${oc.select:actor_rollout_ref.actor.use_torch_compile,true}\n",
    }, version="0.7.0")
    found = {(path, line, code) for path, line, code in _found(package, SM61)}
    assert found == {("model/hf_model.yaml", 1, "RLC204"), ("engine/fsdp.yaml", 1, "RLC351")}
