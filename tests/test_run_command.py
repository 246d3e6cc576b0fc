"""`--run "COMMAND"` (issue 27 item 1, the config-plus-overrides form) and the run model's list keys and fallbacks
(item 2's precision): a command line, with or without a Hydra config of the user's own, is the same run as a script
holding that command; bad input exits 2 with one line. The tree is test_run_model's verl-shaped 0.9.1 package."""

from __future__ import annotations

import json

import pytest

from rlcompat.analysis import run_model, run_scope
from rlcompat.knowledge import verl_config
from tests.test_run_model import SELECT, _json, _where, tree  # noqa: F401 (tree: the fixture)

ENTRY = "python3 -m verl.trainer.main_ppo"
GRPO = "algorithm.adv_estimator=grpo actor_rollout_ref.rollout.name=hf"
FALLBACK = '''import torch


def load(path):
    try:
        model = torch.ones(2, dtype=torch.float32)
        return model
    except BaseException:
        pass
    return torch.ones(2, dtype=torch.bfloat16)


def cleanup():
    try:
        return torch.ones(2, dtype=torch.float32)
    finally:
        pass
    return torch.ones(2, dtype=torch.bfloat16)


def optional():
    try:
        from flash_attn import x
    except ImportError:
        x = torch.bfloat16
    return x
'''


def _reached_and_why(doc) -> tuple[list[str], dict[str, dict]]:
    """The package findings a run reaches, and why each other one is not (the script's or command's own apart)."""
    package = [f for f in doc["findings"] if "verl/" in f["path"]]
    return (_where([f for f in package if f["reached"]]),
            {f"{f['path'].split('verl/', 1)[-1]}:{f['line']}": f["not_reached"] for f in package if not f["reached"]})


@pytest.mark.parametrize("overrides", [GRPO, GRPO + " actor_rollout_ref.model.lora_rank=8 "
                                       "++actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32"])
def test_a_command_line_is_the_same_run_as_the_script_holding_it(tree, run_cli, overrides):
    (tree / "run.sh").write_text(f"#!/bin/bash\n{ENTRY} {overrides}\n")
    _, by_script = _json(run_cli, "scan", "--run", "run.sh", cwd=tree)
    _, by_command = _json(run_cli, "scan", "--run", f"{ENTRY} {overrides}", cwd=tree)
    assert _reached_and_why(by_command) == _reached_and_why(by_script)
    assert by_command["summary"] == by_script["summary"]
    assert by_command["run"].startswith(f"`{ENTRY} {overrides}`: verl.trainer.main_ppo of verl 0.9.1")
    code_s, out_s, _ = run_cli("matrix", "--run", "run.sh", "--targets", "sm61,sm80", "--output-format", "json",
                               "--no-cache", *SELECT, cwd=tree)
    code_c, out_c, _ = run_cli("matrix", "--run", f"{ENTRY} {overrides}", "--targets", "sm61,sm80",
                               "--output-format", "json", "--no-cache", *SELECT, cwd=tree)
    rows = lambda out: {r["name"]: (r["status"], r["decided_by"]) for r in json.loads(out)["targets"]}  # noqa: E731
    assert code_s == code_c == 1 and rows(out_c) == rows(out_s)


def test_the_commands_own_hazards_are_reported_at_it_and_fix_prints_the_fixed_command(tree, run_cli):
    """An override the target cannot run is found in the command line as in a script (at `<command>`), and `fix`
    prints the command with it fixed, writing nothing for it."""
    command = f"{ENTRY} {GRPO} actor_rollout_ref.rollout.dtype=bfloat16"
    (tree / "run.sh").write_text(f"#!/bin/bash\n{command}\n")
    code_s, by_script = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--output-format", "json",
                                "--no-cache", cwd=tree)[:2]
    code_c, by_command = run_cli("scan", "--run", command, "--target", "sm61", "--output-format", "json",
                                 "--no-cache", cwd=tree)[:2]
    own = lambda out, name: sorted(f["code"] for f in json.loads(out)["findings"]  # noqa: E731
                                   if f["path"].endswith(name))
    assert own(by_script, "run.sh") and own(by_command, "<command>") == own(by_script, "run.sh")
    assert code_s == code_c == 1
    code, out, err = run_cli("fix", "--run", command, "--target", "sm61", "--unsafe-fixes", "--no-cache", cwd=tree)
    assert code in (0, 1), err
    fixed = next(line for line in out.splitlines() if line.startswith("The command, fixed"))
    assert "rollout.dtype=bfloat16" not in fixed and fixed.split(": ", 1)[1].startswith(ENTRY)
    assert "float32" in (tree / "verl/workers/config/engine.py").read_text()  # the package is fixed as for a script
    assert not (tree / "<command>").exists()


MY_CONFIG = """\
hydra:
  searchpath:
    - pkg://verl.trainer.config
defaults:
  - ppo_trainer
  - _self_
algorithm:
  adv_estimator: grpo
actor_rollout_ref:
  model:
    lora_rank: 8
  rollout:
    name: hf
    dtype: bfloat16
"""


def _verl_configs(tree) -> None:
    """verl's own configs as 0.9.1 lays them out, reduced to what selects the engine: ppo_trainer chooses the
    model_engine group, whose option sets the global key (verl/trainer/config/ppo_trainer.yaml:10,
    model_engine/megatron.yaml)."""
    config = tree / "verl/trainer/config"
    (config / "model_engine").mkdir(parents=True, exist_ok=True)
    (config / "ppo_trainer.yaml").write_text("defaults:\n  - model_engine: dp\n  - _self_\nalgorithm:\n"
                                             "  adv_estimator: gae\nactor_rollout_ref:\n  model:\n    lora_rank: 0\n"
                                             "  rollout:\n    name: vllm\n    dtype: bfloat16\n")
    for engine in ("dp", "megatron"):
        (config / "model_engine" / f"{engine}.yaml").write_text(f"# @package _global_\nmodel_engine: {engine}\n")


def test_a_users_own_hydra_config_sets_what_its_keys_select(tree, run_cli):
    """`--config-path DIR --config-name NAME` as Hydra reads it: the config composes ppo_trainer (verl's recipe),
    so what it leaves unset has the default run's values, and what it sets selects code (LoRA here)."""
    _verl_configs(tree)
    (tree / "conf").mkdir()
    (tree / "conf" / "my_ppo.yaml").write_text(MY_CONFIG)
    command = f"{ENTRY} --config-path={tree / 'conf'} --config-name my_ppo"
    _, doc = _json(run_cli, "scan", "--run", command, cwd=tree)
    reached, why = _reached_and_why(doc)
    assert "workers/engine/fsdp/transformer_impl.py:16" in reached  # lora_rank: 8 in the user's config
    assert why["workers/engine/megatron/impl.py:3"]["detail"] == "megatron"  # model_engine: ppo_trainer's dp
    assert "composes my_ppo, which composes ppo_trainer.yaml" in doc["run"]
    code, out, _ = run_cli("scan", "--run", command, "--target", "sm61", "--output-format", "json", "--no-cache",
                           cwd=tree)
    assert any(f["path"].endswith("conf/my_ppo.yaml") and f["reached"] for f in json.loads(out)["findings"])
    (tree / "run.sh").write_text(f"#!/bin/bash\n{command} \\\n    actor_rollout_ref.model.lora_rank=0\n")
    _, by_script = _json(run_cli, "scan", "--run", "run.sh", cwd=tree)
    assert "workers/engine/fsdp/transformer_impl.py:16" not in _reached_and_why(by_script)[0]  # the command wins


def test_a_config_group_choice_in_a_defaults_list_selects_as_the_command_line_would(tree, run_cli):
    """verl's own ppo_megatron_trainer composes ppo_trainer and overrides the model_engine group: the Megatron
    engine's code is reached, and what it leaves unset keeps ppo_trainer's values (no NCCL checkpoint engine). A
    config that composes no ppo_trainer leaves every unset key unknown: nothing is left out on its word."""
    _verl_configs(tree)
    (tree / "verl/trainer/config/ppo_megatron_trainer.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - override model_engine: megatron\n  - _self_\n")
    _, doc = _json(run_cli, "scan", "--run", f"{ENTRY} --config-name ppo_megatron_trainer {GRPO}", cwd=tree)
    reached, why = _reached_and_why(doc)
    assert "workers/engine/megatron/impl.py:3" in reached
    assert why["checkpoint_engine/nccl_checkpoint_engine.py:3"]["detail"] == "checkpoint-nccl"
    (tree / "verl/trainer/config/alone.yaml").write_text("algorithm:\n  adv_estimator: gae\nactor_rollout_ref:\n"
                                                         "  rollout:\n    name: vllm\n")
    _, doc = _json(run_cli, "scan", "--run", f"{ENTRY} --config-name alone {GRPO}", cwd=tree)
    reached, _ = _reached_and_why(doc)
    assert "workers/engine/megatron/impl.py:3" in reached and "checkpoint_engine/nccl_checkpoint_engine.py:3" in reached


@pytest.mark.parametrize("run, words", [
    (f"{ENTRY} --config-name nope {GRPO}", "--config-name nope: no nope.yaml in"),
    (f"{ENTRY} --config-path /no/such/dir --config-name my_ppo", "--config-path /no/such/dir: no such directory"),
    (f"python3 -m verl.trainer.main_nothing {GRPO}", "verl.trainer.main_nothing is not an entry point"),
    (f"{ENTRY} actor_rollout_ref.model.path {GRPO}", "`actor_rollout_ref.model.path` after verl.trainer.main_ppo is "
                                                     "not a Hydra override"),
    (f"torchrun --nproc_per_node 2 my_train.py {GRPO}", "runs no python entry point of verl"),
    ("missing.sh", "missing.sh"),
])
@pytest.mark.parametrize("command", ["scan", "matrix"])
def test_bad_runs_exit_2_with_one_line(tree, run_cli, run, words, command):
    target = ("--targets", "sm61") if command == "matrix" else ("--target", "sm61")
    code, out, err = run_cli(command, "--run", run, *target, "--no-cache", cwd=tree)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, (out, err)


@pytest.mark.parametrize("form", ["script", "command"])
def test_an_override_of_a_key_the_config_lacks_is_refused_as_hydra_refuses_it(tree, run_cli, form):
    """verl's own examples/ppo_trainer/run_deepseek7b_llm.sh (volcengine/verl b178a3cd) sets
    critic.model.fsdp_config.param_offload, which verl 0.9.1's config does not have: Hydra stops before anything runs,
    so --run says so (exit 2) rather than judge a run that cannot start. `+key=` adds a key and is not judged."""
    _verl_configs(tree)
    command = f"{ENTRY} {GRPO} critic.model.fsdp_config.param_offload=False"
    (tree / "run.sh").write_text(f"#!/bin/bash\n{command}\n")
    code, _, err = run_cli("scan", "--run", "run.sh" if form == "script" else command, "--target", "sm61", cwd=tree)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "`critic.model.fsdp_config.param_offload` is no key of the config verl.trainer.main_ppo composes" in err
    added = f"{ENTRY} {GRPO} +critic.model.fsdp_config.param_offload=False"
    code, _, err = run_cli("scan", "--run", added, "--target", "sm61", *SELECT, "--no-cache", cwd=tree)
    assert code in (0, 1), err


def test_a_malformed_override_in_a_script_is_refused_as_in_a_command(tree, run_cli):
    (tree / "run.sh").write_text(f"#!/bin/bash\n{ENTRY} \\\n    trainer.total_epochs \\\n    {GRPO} $@\n")
    code, _, err = run_cli("scan", "--run", "run.sh", "--target", "sm61", cwd=tree)
    assert code == 2 and "`trainer.total_epochs` after verl.trainer.main_ppo is not a Hydra override" in err


def test_has_accepts_a_list_holding_the_value():
    knowledge = verl_config.load_version("0.9.1")
    key = "actor_rollout_ref.actor.checkpoint.save_contents"
    when = (((key, ("has:hf_model",)),),)
    assert run_scope.selects(when, knowledge, {}) is False  # the default: [model, optimizer, extra]
    assert run_scope.selects(when, knowledge, {key: "['model','hf_model']"}) is True
    assert run_scope.selects(when, knowledge, {key: "[model,optimizer]"}) is False
    assert run_scope.selects(when, knowledge, {key: None}) is None  # a shell variable
    hf = next(o for o in knowledge.run_options if o.name == "checkpoint-hf-model")
    assert run_scope.selects(hf.when, knowledge, {key: "[model,hf_model]"}) is True
    assert run_scope.selects(hf.when, knowledge, {"critic.checkpoint.save_contents": "[hf_model]",
                                                  "algorithm.adv_estimator": "grpo"}) is False  # no critic


def test_fallback_regions_are_handlers_and_code_after_a_try_that_always_returns(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(FALLBACK)
    assert run_model.fallback_of(str(path), 6) is None and run_model.fallback_of(str(path), 7) is None
    assert run_model.fallback_of(str(path), 9) == 5  # the handler
    assert run_model.fallback_of(str(path), 10) == 5  # after a try whose body returns: only through the handler
    assert run_model.fallback_of(str(path), 18) is None  # no handler: nothing falls back (that line never runs)
    assert run_model.fallback_of(str(path), 25) is None  # an import's fallback runs wherever the package is missing


def test_a_fallbacks_findings_are_their_own_reason_and_fix_minimal_still_fixes_them(tree, run_cli):
    (tree / "verl/utils/loader.py").write_text(FALLBACK)
    main = tree / "verl/trainer/main_ppo.py"
    main.write_text("from verl.utils import loader\n" + main.read_text())
    (tree / "run.sh").write_text(f"#!/bin/bash\n{ENTRY} {GRPO}\n")
    _, doc = _json(run_cli, "scan", "--run", "run.sh", cwd=tree)
    reached, why = _reached_and_why(doc)
    assert why["utils/loader.py:10"] == {"reason": "fallback", "detail": "utils/loader.py:5"}
    assert "utils/loader.py:25" in reached
    code, out, _ = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--no-cache", *SELECT, cwd=tree)
    assert "1 in fallbacks that run only when an earlier call raises" in out  # shown, never dropped
    code, out, err = run_cli("fix", "--run", "run.sh", "--minimal", "--target", "sm61", "--no-cache", *SELECT,
                             cwd=tree)
    assert code == 0, out + err
    assert "bfloat16" not in (tree / "verl/utils/loader.py").read_text()


def test_the_0_9_1_fallback_of_the_value_head_loader_is_found_in_the_installed_verl(installed_verl_091):
    """The two findings after load_valuehead_model's first load (verl/utils/model.py:674,680 of 0.9.1) are in its
    fallback; the first load (:649) is not."""
    import os

    package = installed_verl_091
    model = os.path.join(package, "utils", "model.py")
    assert run_model.fallback_of(model, 649) is None
    assert run_model.fallback_of(model, 674) == run_model.fallback_of(model, 680) == 644


def test_a_run_whose_guarded_call_fails_on_the_target_is_never_all_clear(tree, run_cli):
    """The fallback's finding is not reached, but the call it falls back from is: while that call's hazard remains
    the run reports it (exit 1, no "All clear"); once it is fixed, the fallback is what is left, shown by its reason."""
    for path in ("workers/config/engine.py", "workers/engine/fsdp/transformer_impl.py"):
        (tree / "verl" / path).write_text("X = 1\n")
    (tree / "verl/utils/loader.py").write_text(FALLBACK.replace("torch.float32", "torch.bfloat16", 1))
    main = tree / "verl/trainer/main_ppo.py"
    main.write_text("from verl.utils import loader\n" + main.read_text())
    (tree / "run.sh").write_text(f"#!/bin/bash\n{ENTRY} {GRPO}\n")
    code, out, _ = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--no-cache", *SELECT, cwd=tree)
    assert code == 1 and "All clear" not in out and "verl/utils/loader.py:6" in out
    loader = tree / "verl/utils/loader.py"
    loader.write_text(FALLBACK.split("\n\n\ndef cleanup")[0] + "\n")  # load() alone: its first call fixed
    code, out, _ = run_cli("scan", "--run", "run.sh", "--target", "sm61", "--no-cache", *SELECT, cwd=tree)
    assert code == 0 and "All clear for this run" in out
    assert "1 in fallbacks that run only when an earlier call raises" in out
