"""verifiers' `vf-rl` TOML configs (rlcompat/knowledge/data/frameworks/verifiers/0.1.7.toml): the [inference] table
starts vLLM through vf-vllm, and a [trainer.args] table (or a config without one) that leaves out bf16 keeps
RLConfig's bf16=True. A vf-rl config holds prime-rl's `[trainer.` marker too, so the vLLM finding must name the
framework whose markers the file holds more of."""

from __future__ import annotations

from rlcompat.api import scan_source
from rlcompat.knowledge.targets import resolve_target

VF_RL = ('model = "Qwen/Qwen2.5-1.5B-Instruct"\n\n[env]\nid = "gsm8k"\n\n[inference]\ngpus = 1\n\n'
         '[inference.args]\nenforce_eager = true\n\n[trainer]\ngpus = 1\n\n[trainer.args]\nmax_steps = 100\n')
# no [trainer.args] and no [inference.args]: only `[env]` with its `id` marks it (configs/vf-rl/reasoning-gym.toml)
VF_RL_BARE = ('model = "m"\n\n[env]\nid = "primeintellect/reasoning-gym-env"\n\n[inference]\ngpus = 4\n\n'
              '[trainer]\ngpus = 4\nbatch_size = 512\n')
PRIME_RL = ('max_steps = 20\n\n[model]\nname = "Qwen/Qwen3-0.6B"\n\n[orchestrator]\nbatch_size = 128\n\n'
            '[trainer.model]\nattn = "sdpa"\n\n[inference]\n')


def _scan(text: str, target: str):
    return scan_source(text, resolve_target(target), "rl.toml", "toml")


def _line(text: str, table: str) -> int:
    return text.splitlines().index(table) + 1


def test_inference_table_names_verifiers_not_prime_rl():
    for text in (VF_RL, VF_RL_BARE):
        found = [f for f in _scan(text, "sm61") if f.code == "RLC407"]
        assert [f.location.line for f in found] == [_line(text, "[inference]")], [f.message for f in found]
        assert "makes verifiers start a vLLM server" in found[0].message
        assert "prime-rl" not in found[0].message


def test_a_prime_rl_config_still_names_prime_rl():
    found = [f for f in _scan(PRIME_RL, "sm61") if f.code == "RLC407"]
    assert found and "makes prime-rl start a vLLM server" in found[0].message, [f.message for f in found]


def test_vllm_server_is_no_finding_where_vllm_runs():
    assert not [f for f in _scan(VF_RL, "sm75") if f.code == "RLC407"]


def test_trainer_args_without_bf16_is_reported_at_the_table():
    found = [f for f in _scan(VF_RL, "sm75") if f.code == "RLC118"]
    assert [f.location.line for f in found] == [_line(VF_RL, "[trainer.args]")], [f.message for f in found]
    assert "verifiers/rl/trainer/config.py:216-217" in found[0].message
    assert "verifiers (0.1.7)" in found[0].message


def test_config_without_trainer_args_is_reported_at_trainer():
    found = [f for f in _scan(VF_RL_BARE, "sm61") if f.code == "RLC118"]
    assert [f.location.line for f in found] == [_line(VF_RL_BARE, "[trainer]")], [f.message for f in found]


def test_trainer_args_with_bf16_off_or_a_bf16_card_is_clean():
    off = VF_RL.replace("max_steps = 100\n", "max_steps = 100\nbf16 = false\n")
    assert not [f for f in _scan(off, "sm75") if f.code == "RLC118"]
    assert not [f for f in _scan(VF_RL, "sm80") if f.code == "RLC118"]


def test_another_toml_with_a_trainer_table_is_not_a_vf_rl_config():
    other = '[trainer]\ngpus = 1\n\n[data]\npath = "x"\n'
    assert not [f for f in _scan(other, "sm75") if f.code == "RLC118"]


LOADER = ("from liger_kernel.transformers import AutoLigerKernelForCausalLM\n\n\n"
          "def get_model(model_name, use_liger: bool = True, model_kwargs=None):\n"
          "    if use_liger:\n        return AutoLigerKernelForCausalLM.from_pretrained(model_name, use_cache=False)\n\n\n"
          "def get_model_and_tokenizer(model_name, *, use_liger=True):\n    return get_model(model_name, use_liger)\n")


def _liger(text: str, target: str):
    return [f for f in scan_source(text, resolve_target(target), "utils.py", "python") if f.code == "RLC355"]


def test_liger_parameter_defaults_are_reported_where_written():
    found = _liger(LOADER, "sm61")
    assert sorted(f.location.line for f in found) == [4, 9], [f.message for f in found]
    assert all("use_liger is True" in f.message and f.fix is not None for f in found)


def test_liger_parameter_default_off_or_on_a_triton_card_is_clean():
    assert not _liger(LOADER.replace("use_liger: bool = True", "use_liger: bool = False")
                      .replace("use_liger=True", "use_liger=False"), "sm61")
    assert not _liger(LOADER, "sm70")


def test_a_use_liger_parameter_in_a_file_without_liger_is_not_read():
    assert not _liger("def build(name, use_liger: bool = True):\n    return dict(name=name, use_cache=False)\n", "sm61")


def test_a_file_whose_only_setting_is_the_parameter_default_is_read():
    text = ("from liger_kernel.transformers import AutoLigerKernelForCausalLM\n\n\n"
            "def get_model(model_name, use_liger=True):\n    return AutoLigerKernelForCausalLM, model_name, use_liger\n")
    assert [f.location.line for f in _liger(text, "sm61")] == [4]


def test_trainer_args_that_turn_bf16_on_are_reported_at_the_key():
    on = VF_RL.replace("max_steps = 100\n", "max_steps = 100\nbf16 = true\n")
    # one hazard, one finding: the generic bf16 rule (RLC107) reports the key, RLC118 no longer the table
    found = [f for f in _scan(on, "sm75") if f.code in ("RLC107", "RLC118")]
    assert [f.location.line for f in found] == [_line(on, "bf16 = true")], [f.message for f in found]
