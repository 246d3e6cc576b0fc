"""What the verl coverage corpora (0.7.0, 0.9.1 trainer configs) needed: files verl never reads, OmegaConf
`oc.select` defaults, settings only another training engine reads, main_generation's config, and verl launch
scripts (issue 13). Each test builds a small verl package with its version file."""

from __future__ import annotations

import json

import pytest

from rlcompat.knowledge import identity, verl_config as vk
from rlcompat.api import fix_paths, scan_paths, scan_source
from rlcompat.report import Summary, not_read_line, render
from rlcompat.knowledge.targets import resolve_target
from tests.verl_trees import verl_package

SM61, SM75 = resolve_target("sm61"), resolve_target("sm75")
GENERATED = ("# This reference configration yaml is automatically generated via 'scripts/generate_trainer_config.sh'\n"
             "# The file is usually only for reference and never used.\n\nactor_rollout_ref:\n  rollout:\n"
             "    dtype: bfloat16\n    enforce_eager: false\n")


pytestmark = pytest.mark.usefixtures("fresh_verl_detection")


def test_generated_reference_configs_are_not_read_and_the_report_says_why(tmp_path):
    package = verl_package(tmp_path, "0.9.1", {"trainer/config/_generated_ppo_trainer.yaml": GENERATED,
                                               "trainer/config/rollout/rollout.yaml": "name: ???\ndtype: bfloat16\n"})
    report = scan_paths([str(package)], SM61)
    assert {f.path.rsplit("/", 1)[-1] for f in report.findings} == {"rollout.yaml"}
    (why,) = [w for p, w in report.not_read if p.endswith("_generated_ppo_trainer.yaml")]
    assert why.startswith("not read by verl 0.9.1: ") and "never used" in why
    summary = Summary("scan", SM61, report.findings, [], report.files_checked, not_read=report.not_read)
    assert "not read by verl 0.9.1" in not_read_line(report.not_read)
    reasons = [r["reason"] for r in json.loads(render("json", summary))["not_read"]]
    assert any(r.startswith("not read by verl 0.9.1") for r in reasons)
    # Named explicitly (pre-commit, the coverage bench): still not read.
    named = scan_paths([str(package / "trainer/config/_generated_ppo_trainer.yaml")], SM61)
    assert not named.findings and named.not_read


def test_generated_file_is_checked_where_the_version_is_unknown_or_outside_verl(tmp_path, monkeypatch):
    monkeypatch.setattr(identity, "installed_version", lambda distribution: "0.9.1" if distribution == "verl" else None)
    unknown = verl_package(tmp_path / "u", None, {"trainer/config/_generated_ppo_trainer.yaml": GENERATED})
    assert [f.code for f in scan_paths([str(unknown)], SM61).findings if f.code == "RLC104"]
    copy = tmp_path / "project" / "_generated_ppo_trainer.yaml"
    copy.parent.mkdir()
    copy.write_text(GENERATED)
    assert [f.code for f in scan_paths([str(copy)], SM61).findings if f.code == "RLC104"]
    older = verl_package(tmp_path / "o", "0.4.1", {"trainer/config/_generated_ppo_trainer.yaml": GENERATED})
    assert [f.code for f in scan_paths([str(older)], SM61).findings if f.code == "RLC104"]  # 0.4.1 lists none


def test_a_verl_tree_of_unknown_version_gets_no_dead_key_claim_from_the_installed_verl(tmp_path, monkeypatch):
    monkeypatch.setattr(identity, "installed_version", lambda distribution: "0.9.1" if distribution == "verl" else None)
    package = verl_package(tmp_path / "t", None, {"trainer/config/actor/actor.yaml": "use_torch_compile: true\n"})
    own = identity.verl_package(str(package))
    assert own.how == "fork" and own.version is None and not own.exact
    notes = [f for f in scan_paths([str(package)], SM61).findings if f.code == "RLC352"]
    assert notes and all("does nothing in verl" not in f.message and f.fix is None for f in notes)
    # Outside any verl tree (nothing declared) the installed verl is the one a script runs with.
    (tmp_path / "bare").mkdir()
    assert identity.resolve(str(tmp_path / "bare")).get("verl").version == "0.9.1"


def test_oc_select_default_is_judged_and_only_the_default_is_rewritten(tmp_path):
    ref = "use_torch_compile: ${oc.select:actor_rollout_ref.actor.use_torch_compile,true}\n"
    package = verl_package(tmp_path, "0.7.0", {"trainer/config/ref/ref.yaml": ref})
    # verl's own ref/ref.yaml: every config composing it sets the followed key (`follows_always_set`), so the
    # fallback never applies there; a user's config beside the package is judged by it.
    assert not scan_paths([str(package / "trainer/config/ref/ref.yaml")], SM61).findings
    path = tmp_path / "my_ppo.yaml"
    path.write_text("actor_rollout_ref:\n  ref:\n    " + ref)
    (finding,) = [f for f in scan_paths([str(path)], SM61).findings if f.code == "RLC351"]
    assert "from the default of ${oc.select:actor_rollout_ref.actor.use_torch_compile" in finding.message
    fix_paths([str(path)], SM61)
    assert path.read_text() == "actor_rollout_ref:\n  ref:\n    " + ref.replace(",true}", ",false}")
    # The followed key set in the same config: that line is the one judged.
    both = "actor:\n  use_torch_compile: false\nref:\n  use_torch_compile: ${oc.select:actor.use_torch_compile,true}\n"
    assert not [f for f in scan_source(both, SM61, str(package / "x.yaml"), "yaml") if f.code == "RLC351"]


def test_070_legacy_fsdp_dtype_megatron_and_reward_files(tmp_path):
    package = verl_package(tmp_path, "0.7.0", {
        "trainer/config/engine/fsdp.yaml": "strategy: fsdp\ndtype: bfloat16 # [\"bfloat16\", \"float16\"]\n",
        "trainer/config/engine/megatron.yaml": "override_transformer_config:\n  attention_backend: flash\ndtype: bfloat16\n",
        "trainer/config/reward_model/megatron_reward_loop.yaml": "rollout:\n  name: ???\n  dtype: bfloat16\n",
        "trainer/config/reward_model/megatron_reward_model.yaml": "megatron:\n  dtype: bfloat16\n",
        "trainer/config/generation.yaml": "rollout:\n  name: vllm\n",
    })
    found = {(f.path.split("config/")[-1], f.location.line, f.code) for f in scan_paths([str(package)], SM61).findings}
    assert ("engine/fsdp.yaml", 2, "RLC105") in found  # the legacy worker's param dtype (fsdp_workers.py:491)
    assert ("engine/megatron.yaml", 2, "RLC204") in found and ("engine/megatron.yaml", 3, "RLC120") in found
    # The reward model is off in every shipped entry config (reward_model.enable: False): its settings in verl's own
    # files are not reported (rlcompat/knowledge/data/verl/0.7.0.toml [[unselected]]); a user's config that enables it is.
    assert not [f for f in found if f[0].startswith("reward_model/")]
    user = tmp_path / "my_reward.yaml"
    user.write_text("reward_model:\n  enable: True\n  rollout:\n    name: vllm\n    dtype: bfloat16\n")
    assert [(f.location.line, f.code) for f in scan_paths([str(user)], SM61).findings if f.code == "RLC104"] == [(5, "RLC104")]
    assert ("generation.yaml", 2, "RLC401") in found
    # rollout.name of another tool's YAML is not main_generation's.
    assert not [f for f in scan_source("rollout:\n  name: hf\n", SM61, str(tmp_path / "tool.yaml"), "yaml")
                if f.code == "RLC401"]


def test_engine_settings_say_when_they_apply_and_yield_to_another_engine(tmp_path):
    package = verl_package(tmp_path, "0.9.1", {"trainer/config/engine/fsdp.yaml": (
        "strategy: fsdp\nturbo_config:\n  distributed:\n    fsdp_plan:\n      param_dtype: bf16\n      output_dtype: bf16\n")})
    # verl's own engine/fsdp.yaml: fsdp_turbo is selected by no shipped entry config ([[unselected]]): not reported.
    assert not [f for f in scan_paths([str(package)], SM75).findings if f.code == "RLC120"]
    user = tmp_path / "my_ppo.yaml"
    user.write_text("actor_rollout_ref:\n  actor:\n    fsdp_config:\n      turbo_config:\n        distributed:\n"
                    "          fsdp_plan:\n            param_dtype: bf16\n            output_dtype: bf16\n")
    findings = [f for f in scan_paths([str(user)], SM75).findings if f.code == "RLC120"]
    assert [f.location.line for f in findings] == [7, 8]
    assert all("it applies when a run selects strategy=fsdp_turbo" in f.message for f in findings)
    fsdp_run = ("python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.strategy=fsdp "
                "actor_rollout_ref.actor.megatron.dtype=bfloat16\n")
    assert not [f for f in scan_source(fsdp_run, SM75, str(tmp_path / "run.sh"), "shell") if f.code == "RLC120"]


def test_rollout_settings_wait_for_an_engine_to_be_chosen(tmp_path):
    package = verl_package(tmp_path, "0.9.1", {"trainer/config/rollout/rollout.yaml": "name: ???\nenforce_eager: False\n"})
    assert "RLC402" not in [f.code for f in scan_paths([str(package)], SM61).findings]


def test_verl_launch_script_cases_of_issue_13(tmp_path):
    package = verl_package(tmp_path, "0.9.1", {})
    script = ("export VLLM_ATTENTION_BACKEND=FLASH_ATTN\n"
              "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.n_gpus_per_node=1\n"
              "torchrun -m verl.trainer.sft_trainer model.use_liger=True model.path=Qwen/Qwen2.5-0.5B\n"
              "python - <<EOF\nimport torch\nx = torch.ones(2, dtype=torch.bfloat16)\nEOF\n")
    found = scan_source(script, SM61, str(package / "run.sh"), "shell")
    lines = {(f.code, f.location.line) for f in found}
    assert ("RLC207", 1) in lines  # the vLLM attention backend variable
    assert ("RLC354", 3) in lines  # Liger in verl's SFT trainer
    assert ("RLC101", 6) in lines  # Python inside the heredoc, at its own line
    # The SFT trainer's config has no actor_rollout_ref/critic: no PPO override is added to its command.
    assert not [f for f in found if f.location.line == 3 and f.code != "RLC354"]


def test_model_engine_selects_the_engine_whose_defaults_apply(tmp_path):
    package = verl_package(tmp_path, "0.9.1", {})
    megatron = "python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.rollout.name=vllm\n"
    codes = [f.code for f in scan_source(megatron, SM61, str(package / "run.sh"), "shell")]
    assert "RLC105" not in codes and "RLC351" not in codes  # FSDP's defaults are not the Megatron run's
    dp = megatron.replace("model_engine=megatron", "model_engine=dp")
    codes = [f.code for f in scan_source(dp, SM61, str(package / "run.sh"), "shell")]
    assert "RLC105" in codes and "RLC351" in codes


def test_050_generated_files_are_not_read_and_main_generation_rollout_is(tmp_path):
    package = verl_package(tmp_path, "0.5.0", {
        "trainer/config/_generated_ppo_trainer.yaml": GENERATED,
        "trainer/config/_generated_ppo_megatron_trainer.yaml": GENERATED,
        "trainer/config/generation.yaml": "rollout:\n  name: vllm\n  dtype: bfloat16\n",
    })
    report = scan_paths([str(package)], SM61)
    assert {f.path.rsplit("/", 1)[-1] for f in report.findings} == {"generation.yaml"}
    assert ("RLC401", 2) in {(f.code, f.location.line) for f in report.findings}
    reasons = [w for p, w in report.not_read if p.rsplit("/", 1)[-1].startswith("_generated_")]
    assert len(reasons) == 2 and all(w.startswith("not read by verl 0.5.0: ") for w in reasons)
    # sm75 runs vLLM: main_generation's engine is no hazard there.
    assert "RLC401" not in [f.code for f in scan_paths([str(package)], SM75).findings]


def test_settings_of_options_no_shipped_entry_config_selects(tmp_path):
    """verl 0.9.1's VeOmni ref config and reward-model rollout: not reported in verl's own files (model_engine=veomni
    and reward.reward_model.enable are user choices: rlcompat/knowledge/data/verl/0.9.1.toml [[unselected]]); the same values in a
    user's launch command that selects the option are."""
    veomni_ref = ("veomni:\n  attn_implementation: "
                  "${oc.select:actor_rollout_ref.actor.veomni.attn_implementation,flash_attention_2}\n")
    reward = "reward_model:\n  enable: False\n  rollout:\n    name: ???\n    dtype: bfloat16\n"
    package = verl_package(tmp_path, "0.9.1", {"trainer/config/ref/veomni_ref.yaml": veomni_ref,
                                               "trainer/config/reward/reward.yaml": reward,
                                               "trainer/config/engine/veomni.yaml": "attn_implementation: flash_attention_2\n"})
    assert not scan_paths([str(package)], SM61).findings
    # A copy outside a verl package of known version is judged as before.
    copy = tmp_path / "copy" / "veomni_ref.yaml"
    copy.parent.mkdir()
    copy.write_text(veomni_ref)
    assert [f.code for f in scan_paths([str(copy)], SM61).findings] == ["RLC204"]
    run = ("python3 -m verl.trainer.main_ppo model_engine=veomni "
           "actor_rollout_ref.actor.veomni.attn_implementation=flash_attention_2 "
           "reward.reward_model.enable=True reward.reward_model.rollout.dtype=bfloat16\n")
    codes = {f.code for f in scan_source(run, SM61, str(tmp_path / "run.sh"), "shell")}
    assert {"RLC204", "RLC104"} <= codes


def test_unselected_key_paths_follow_indentation():
    from rlcompat.lang.keypath import is_under_prefixes, key_path_at

    lines = "a: 1\nreward_model:\n  enable: False\n  # note\n  rollout:\n    dtype: bfloat16\nother: 2\n".splitlines()
    assert key_path_at(lines, 6) == "reward_model.rollout.dtype"
    assert is_under_prefixes(("reward_model",), lines, 6)
    assert not is_under_prefixes(("reward_model",), lines, 7) and not is_under_prefixes(("reward",), lines, 6)
    assert is_under_prefixes(("",), lines, 1)
