"""The PPO/GRPO memory estimate: the documented formula, term by term, and the search for settings that fit."""

from __future__ import annotations

import pytest

from rlcompat.doctor import memory
from rlcompat.doctor.memory import GIB, Plan
from rlcompat.knowledge.model_shapes import Shape


@pytest.mark.parametrize("text,count", [("0.5B", 500_000_000), ("1.5b", 1_500_000_000), ("350M", 350_000_000),
                                        ("494032768", 494_032_768), (" 7B ", 7_000_000_000)])
def test_parse_params(text, count):
    assert memory.parse_params(text) == count


@pytest.mark.parametrize("text", ["", "big", "0B", "-1B", "1.5X"])
def test_parse_params_rejects(text):
    with pytest.raises(memory.MemoryInputError):
        memory.parse_params(text)


def test_parse_bytes():
    assert memory.parse_bytes("24GiB") == 24 * GIB == memory.parse_bytes("24")
    assert memory.parse_bytes("16GB") == 16 * 10**9
    with pytest.raises(memory.MemoryInputError):
        memory.parse_bytes("lots")


def test_nearest_shape_keeps_the_requested_count():
    s = memory.nearest_shape(memory.parse_params("0.5B"))
    assert s.name == "Qwen2.5-0.5B" and s.params == 500_000_000
    assert memory.nearest_shape(memory.parse_params("6B")).name == "Qwen2.5-7B"


TINY = Shape("tiny", params=1000, hidden=8, layers=2, intermediate=16, vocab=10, kv_dim=4)


def test_formula_term_by_term():
    """Every term of the docstring formula, on numbers small enough to check by hand."""
    e = memory.estimate(1000, algo="ppo", dtype="float32", gpus=1, seq_len=5, rollout="hf", shape=TINY,
                        plan=Plan(micro_batch=2))
    b, s, h, L, V, d = 2, 5, 8, 2, 10, 4
    assert e.parts["actor weights (fp32)"] == 4000 and e.parts["actor AdamW moments (fp32)"] == 8000
    assert e.parts["critic weights+gradients+AdamW (fp32)"] == 16000
    activations = L * b * s * h * d + (8.5 * h + 4 * 16) * b * s * d
    assert e.parts["actor activations (one micro-batch)"] == activations
    assert e.parts["logits (one micro-batch)"] == 4 * b * s * V * 4
    assert e.parts["rollout KV cache (HF generate)"] == 2 * L * b * s * 4 * d
    assert e.phases["actor update"] == 16000 + activations + 4 * b * s * V * 4 + 16000 + 4000 + memory.CUDA_CONTEXT
    assert e.phases["reference log-probs"] == 4000 + 2 * b * s * V * 4 + 16000 + 16000 + memory.CUDA_CONTEXT
    assert e.peak == max(e.phases.values()) and e.fits is None


def test_the_adamw_step_bounds_an_update_whose_activations_are_smaller():
    """torch's foreach AdamW holds one fp32 temporary per parameter during the step, after activations are freed."""
    e = memory.estimate(1000, algo="ppo", dtype="float32", gpus=1, seq_len=1, rollout="hf", shape=TINY,
                        plan=Plan(micro_batch=1))
    activations = e.parts["actor activations (one micro-batch)"]
    assert activations + e.parts["logits (one micro-batch)"] < 4000
    assert e.phases["actor update"] == 16000 + 4000 + 16000 + 4000 + memory.CUDA_CONTEXT
    assert e.phases["critic update"] == 16000 + 4000 + 16000 + 4000 + memory.CUDA_CONTEXT
    sharded = memory.estimate(1000, algo="grpo", dtype="float32", gpus=2, seq_len=1, rollout="hf", shape=TINY,
                              plan=Plan(micro_batch=1), use_ref=False)
    assert sharded.phases["actor update"] == 8000 + 2000 + memory.CUDA_CONTEXT


def test_logits_below_fp32_keep_the_lm_head_output_beside_its_upcast():
    b, s, V = 2, 5, 10
    assert memory.logits_bytes(b, s, V, 4, training=True) == 4 * b * s * V * 4
    assert memory.logits_bytes(b, s, V, 2, training=True) == 4 * b * s * V * 4 + b * s * V * 2
    assert memory.logits_bytes(b, s, V, 2, training=False) == 2 * b * s * V * 4 + b * s * V * 2


def test_sharding_offload_and_algo_change_what_they_should():
    base = dict(dtype="float32", seq_len=1024, rollout="hf", card_bytes=24 * GIB)
    one = memory.estimate(500_000_000, **base)
    two = memory.estimate(500_000_000, gpus=2, **base)
    assert two.parts["actor weights (fp32)"] == one.parts["actor weights (fp32)"] // 2
    grpo = memory.estimate(500_000_000, algo="grpo", **base)
    assert "critic update" not in grpo.phases and grpo.peak < one.peak
    offloaded = memory.estimate(500_000_000, plan=Plan(ref_param_offload=True, critic_param_offload=True,
                                                       critic_optimizer_offload=True), **base)
    assert offloaded.phases["actor update"] == one.phases["actor update"] - 16 * 500_000_000 // 1 - 4 * 500_000_000
    bf16 = memory.estimate(500_000_000, **{**base, "dtype": "bfloat16"})
    assert bf16.parts["actor activations (one micro-batch)"] * 2 == one.parts["actor activations (one micro-batch)"]


def test_vllm_rollout_takes_its_fraction_of_the_card():
    e = memory.estimate(500_000_000, rollout="vllm", card_bytes=80 * GIB, plan=Plan(rollout_memory_fraction=0.4))
    assert e.parts["rollout (vllm, gpu_memory_utilization)"] == int(0.4 * 80 * GIB)


def test_suggest_returns_defaults_when_they_fit_and_a_fitting_plan_otherwise():
    est, changes = memory.suggest(500_000_000, dtype="bfloat16", rollout="hf", card_bytes=80 * GIB)
    assert est.fits and changes == [] and est.plan == Plan()
    est, changes = memory.suggest(500_000_000, dtype="float32", rollout="hf", card_bytes=24 * GIB)
    assert est.fits and est.peak <= est.budget and changes
    assert est.plan != Plan()


def test_suggest_gives_up_honestly_and_counts_gpus():
    kwargs = dict(dtype="float32", rollout="hf", card_bytes=24 * GIB)
    est, _ = memory.suggest(3_000_000_000, **kwargs)
    assert est.fits is False
    needed = memory.gpus_needed(3_000_000_000, **kwargs)
    assert needed is not None and needed > 1
    assert memory.estimate(3_000_000_000, gpus=needed, plan=Plan(micro_batch=1, ref_param_offload=True,
                           critic_param_offload=True, critic_optimizer_offload=True, actor_optimizer_offload=True,
                           actor_param_offload=True), **kwargs).fits


def test_the_hf_rollout_server_holds_the_whole_model_in_the_rollout_phase_only():
    """rlcompat's hf rollout runs one replica per GPU with its own copy of the whole model (not an FSDP shard),
    moved to host memory while the trainer updates: more GPUs shrink everything but that copy."""
    one = memory.estimate(1000, algo="grpo", dtype="float32", gpus=1, seq_len=1, rollout="hf", shape=TINY,
                          plan=Plan(micro_batch=1), use_ref=False)
    two = memory.estimate(1000, algo="grpo", dtype="float32", gpus=2, seq_len=1, rollout="hf", shape=TINY,
                          plan=Plan(micro_batch=1), use_ref=False)
    assert one.parts["rollout server weights (whole model)"] == two.parts["rollout server weights (whole model)"] == 4000
    rollout_rest = one.parts["rollout KV cache (HF generate)"] + 1 * TINY.vocab * 4 + memory.CUDA_CONTEXT
    assert one.phases["rollout"] == 16000 + 4000 + rollout_rest  # the actor's resident states beside the copy
    assert two.phases["rollout"] == 8000 + 4000 + rollout_rest
    offloaded = memory.estimate(1000, algo="grpo", dtype="float32", gpus=1, seq_len=1, rollout="hf", shape=TINY,
                                plan=Plan(micro_batch=1, actor_param_offload=True, actor_optimizer_offload=True),
                                use_ref=False)
    assert offloaded.phases["rollout"] == 4000 + rollout_rest
    # A 7B model in fp32 is a 26 GiB copy: no number of 24 GiB cards holds it, and doctor says why.
    kwargs = dict(dtype="float32", rollout="hf", card_bytes=24 * GIB)
    assert memory.gpus_needed(7_000_000_000, **kwargs) is None
    assert memory.gpus_needed(7_000_000_000, **{**kwargs, "rollout": "vllm"}) is not None


def _named(plan, algo, rollout, target="sm90", version="0.9.1"):
    from rlcompat.doctor import verl_keys
    from rlcompat.knowledge import verl_config
    from rlcompat.knowledge.targets import resolve_target

    knowledge, why = verl_config.knowledge_for(version)
    return verl_keys.name(knowledge, why, plan.settings(algo, rollout), resolve_target(target), algo)


def test_overrides_are_live_keys_of_the_installed_verl():
    from rlcompat.knowledge import verl_config

    live = verl_config.load_version("0.9.1")
    named = _named(Plan(micro_batch=2, actor_optimizer_offload=True, critic_param_offload=True), "ppo", "vllm")
    keys = named.overrides
    assert "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True" in keys
    assert "critic.fsdp.param_offload=True" in keys
    assert "actor_rollout_ref.rollout.gpu_memory_utilization=0.50" in keys
    assert "actor_rollout_ref.rollout.name=vllm" in keys and not named.unnamed
    assert not any(k.startswith("critic.") for k in _named(Plan(critic_param_offload=True), "grpo", "hf").overrides)
    fp32 = _named(Plan(), "ppo", "hf", target="sm61").overrides
    # verl 0.9.1's FSDP engine computes in mixed_precision.param_dtype; fsdp_config.dtype is dead there (RLC106)
    assert "++critic.fsdp.mixed_precision.param_dtype=fp32" in fp32 and not any(".fsdp_config.dtype" in k for k in fp32)
    assert "actor_rollout_ref.rollout.name=hf" in fp32  # rlcompat's plugin registers hf (RLC401's fix)
    for override in keys + fp32:
        key = override.split("=", 1)[0].lstrip("+")
        assert key not in live.dead and any(s.key == key for s in live.settings), key
    assert not any("dtype" in k for k in _named(Plan(), "ppo", "vllm", target="sm90").overrides)
    fp16 = _named(Plan(), "grpo", "vllm", target="sm75").overrides
    assert "actor_rollout_ref.rollout.dtype=float16" in fp16 and "++actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32" in fp16


def test_no_key_is_named_for_a_verl_that_no_rule_set_describes():
    for version, why in ((None, "not installed"), ("0.1.0", "older than every rule set")):
        named = _named(Plan(), "ppo", "hf", target="sm61", version=version)
        assert named.overrides == [] and why in named.problem
    newer = _named(Plan(), "ppo", "hf", target="sm61", version="0.9.2")  # scan applies the 0.9.1 rules to it too
    assert newer.source.startswith("verl 0.9.2 (rules for 0.9.1)") and newer.overrides


def test_unknown_algo_or_rollout():
    with pytest.raises(memory.MemoryInputError):
        memory.estimate(1000, algo="dpo")
    with pytest.raises(memory.MemoryInputError):
        memory.estimate(1000, rollout="trt")
