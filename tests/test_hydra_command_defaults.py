"""A launch command of a framework whose entry points take Hydra overrides (`hydra_roots` in its knowledge:
skyrl-train) leaves every key it does not override at the entry config's default: a hazardous default of a known
release is reported at the command, with the override to pass."""

from __future__ import annotations

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge import frameworks as fk
from rlcompat.knowledge.targets import resolve_target
from rlcompat.rules import file_rules

RUN = "uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base \\\n  trainer.strategy=fsdp2 \\\n{extra}  trainer.logger=console\n"
SAFE = ("  trainer.bf16=false \\\n  trainer.flash_attn=false \\\n  trainer.use_sample_packing=false \\\n"
        "  generator.model_dtype=float16 \\\n  +trainer.policy.fsdp_config.mixed_precision.param_dtype=fp32 \\\n"
        "  +trainer.ref.fsdp_config.mixed_precision.param_dtype=fp32 \\\n")


def _tree(tmp_path, script: str, version: str = "0.3.1"):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "skyrl-train"\nversion = "{version}"\n')
    (tmp_path / "skyrl_train").mkdir()
    (tmp_path / "skyrl_train" / "__init__.py").write_text("")
    (tmp_path / "examples").mkdir()
    path = tmp_path / "examples" / "run.sh"
    path.write_text(script)
    return str(path)


def _left(path: str, target: str = "sm75") -> dict[str, str]:
    """The keys reported as left at their default, by rule code."""
    found = scan_paths([path], resolve_target(target)).findings
    return {f.message.split(" is not overridden")[0]: f.code for f in found if " is not overridden" in f.message}


def test_a_command_that_leaves_the_defaults_gets_each_hazardous_one_at_the_command(tmp_path):
    path = _tree(tmp_path, RUN.format(extra=""))
    assert _left(path) == {
        "trainer.bf16": "RLC118", "generator.model_dtype": "RLC118", "trainer.flash_attn": "RLC207",
        "trainer.use_sample_packing": "RLC207", "trainer.policy.fsdp_config.mixed_precision.param_dtype": "RLC118",
        "trainer.ref.fsdp_config.mixed_precision.param_dtype": "RLC118"}
    found = scan_paths([path], resolve_target("sm75")).findings
    assert {f.location.line for f in found if " is not overridden" in f.message} == {1}
    message = next(f.message for f in found if f.message.startswith("trainer.policy.fsdp_config"))
    assert "skyrl-train 0.3.1 knowledge: skyrl_train/distributed/fsdp_strategy.py:217-225" in message
    assert message.endswith("pass +trainer.policy.fsdp_config.mixed_precision.param_dtype=fp32")
    # sm61 adds the rollout engine vLLM cannot run (generator.backend defaults to vllm)
    assert _left(path, "sm61")["generator.backend"] == "RLC404"
    assert not _left(path, "sm80")


def test_overriding_each_key_leaves_nothing_and_conditions_hold(tmp_path):
    assert not _left(_tree(tmp_path, RUN.format(extra=SAFE)))


def test_a_key_the_run_does_not_read_is_not_reported(tmp_path):
    # no KL term: no reference model, so neither trainer.bf16 (it loads the ref model) nor the ref's FSDP dtype
    left = _left(_tree(tmp_path, RUN.format(extra="  trainer.algorithm.use_kl_loss=false \\\n")))
    assert "trainer.bf16" not in left and "trainer.ref.fsdp_config.mixed_precision.param_dtype" not in left
    assert "trainer.policy.fsdp_config.mixed_precision.param_dtype" in left


@pytest.mark.parametrize("flag", ["--config-name my_grpo", "--config-path=/tmp/configs"])
def test_a_command_composing_another_config_is_not_judged_by_the_entry_configs_defaults(tmp_path, flag):
    script = RUN.format(extra="").replace("main_base \\\n", f"main_base {flag} \\\n")
    assert not _left(_tree(tmp_path, script))


def test_an_unknown_release_gets_no_default(tmp_path):
    assert not _left(_tree(tmp_path, RUN.format(extra=""), version="0.0.9"))


def test_hydra_roots_are_top_level_sections():
    with pytest.raises(ValueError, match="hydra_roots"):
        fk._framework({"framework": "x", "label": "x", "version": "1", "hydra_roots": ["trainer"]}, "1.toml")
    assert fk._framework({"framework": "x", "label": "x", "version": "1", "hydra_roots": ["trainer."]},
                         "1.toml").hydra_roots == ("trainer.",)


def test_every_hydra_framework_command_wakes_the_rules_of_its_hazardous_defaults():
    """A script spells none of the keys it leaves out: the rule judging a key's kind must be woken by the command."""
    rules = [r for r in file_rules() if hasattr(r, "kinds") and hasattr(r, "check_config")]
    checked = 0
    for fw in fk.frameworks():
        for key in fw.keys:
            if not fw.hydra_roots or not key.names[0].startswith(fw.hydra_roots) or not key.default:
                continue
            if not any(fk.kinds()[key.kind].hazards[i].matches(key.default)
                       for i in range(len(fk.kinds()[key.kind].hazards))):
                continue
            owners = [r for r in rules if key.kind in r.kinds]
            # a command that runs the framework holds one of its `commands`, so a trigger inside one is spelled
            assert owners and all(any(t in c for t in r.triggers for c in fw.commands) for r in owners), (fw.name, key.names)
            checked += 1
    assert checked >= 6


# `: "${NAME:=value}"` (rlcompat/lang/shell.py `record_default`): a launch script's own default for a variable its
# command reads, as skyrl-train's examples/gsm8k/run_gsm8k.sh writes INFERENCE_BACKEND at 332c7cb
def test_a_null_command_default_gives_the_variable_its_value(tmp_path):
    script = (': "${INFERENCE_BACKEND:=vllm}"\n: "${OTHER:=$HOME}"\n' + RUN.format(extra="").replace(
        "trainer.strategy=fsdp2", "generator.backend=$INFERENCE_BACKEND trainer.strategy=fsdp2"))
    found = scan_paths([_tree(tmp_path, script)], resolve_target("sm61")).findings
    (backend,) = [f for f in found if f.code == "RLC404"]
    assert backend.location.line == 4 and "from INFERENCE_BACKEND=... on line 1" in backend.message
    assert "generator.backend is vllm" in backend.message


def test_a_fix_rewrites_the_default_where_it_is_written(tmp_path):
    from rlcompat.api import fix_paths

    path = tmp_path / "serve.sh"
    path.write_text(': ${DTYPE:=bfloat16}\npython -m vllm.entrypoints.openai.api_server --model m --dtype $DTYPE\n')
    fix_paths([str(path)], resolve_target("sm61"))
    assert path.read_text().splitlines()[0] == ": ${DTYPE:=float32}"


def test_a_default_does_not_replace_a_value_the_script_set_before(tmp_path):
    path = tmp_path / "serve.sh"
    path.write_text('DTYPE=float32\n: "${DTYPE:=bfloat16}"\nEMPTY=\n: ${EMPTY:=bfloat16}\n'
                    'python -m vllm.entrypoints.openai.api_server --model m --dtype $DTYPE\n'
                    'python -m vllm.entrypoints.openai.api_server --model m --dtype $EMPTY\n')
    found = [f for f in scan_paths([str(path)], resolve_target("sm61")).findings if "--dtype" in f.message]
    # DTYPE keeps float32; EMPTY was empty, which `:=` replaces
    assert [(f.location.line, "on line 4" in f.message) for f in found] == [(6, True)], [f.message for f in found]


BASE_CONFIG = """trainer:
  strategy: fsdp2
  bf16: {bf16}
  flash_attn: true
  use_sample_packing: true
  algorithm:
    use_kl_loss: true
generator:
  backend: vllm
  model_dtype: bfloat16
"""


def _checkout(tmp_path, script: str, bf16: str) -> str:
    """A SkyRL checkout: the package's own entry config beside the launch script's tree."""
    path = _tree(tmp_path, script)
    (tmp_path / "skyrl_train" / "config").mkdir()
    (tmp_path / "skyrl_train" / "config" / "ppo_base_config.yaml").write_text(BASE_CONFIG.format(bf16=bf16))
    return path


def test_a_checkout_runs_with_its_own_entry_config_not_the_releases_defaults(tmp_path):
    # The user turned bf16 off in the checkout's ppo_base_config.yaml: the command runs with that, not 0.3.1's true.
    left = _left(_checkout(tmp_path, RUN.format(extra=""), bf16="false"))
    assert "trainer.bf16" not in left
    assert left["trainer.flash_attn"] == "RLC207"  # still true in the checkout's config
    # keys the checkout's config does not write keep the release's code default (FSDP's param dtype)
    assert left["trainer.policy.fsdp_config.mixed_precision.param_dtype"] == "RLC118"


def test_a_hazard_the_checkouts_config_sets_is_reported_naming_that_file(tmp_path):
    path = _checkout(tmp_path, RUN.format(extra=""), bf16="true")
    found = scan_paths([path], resolve_target("sm75")).findings
    message = next(f.message for f in found if f.message.startswith("trainer.bf16 is not overridden"))
    assert "the tree's skyrl_train/config/ppo_base_config.yaml, which sets it to" in message
    assert "knowledge" not in message.split(":")[0]


def test_hydra_config_must_be_a_yaml_path_inside_the_package():
    with pytest.raises(ValueError, match="hydra_config"):
        fk._hydra_config("/abs/config.yaml", "x.toml")
    with pytest.raises(ValueError, match="hydra_config"):
        fk._hydra_config("pkg/config/base.json", "x.toml")
    assert fk._hydra_config("pkg/config/base.yaml", "x.toml") == "pkg/config/base.yaml"
