"""The precision policy (rlcompat/knowledge/data/precision.toml): complete, sourced, what the dtype rules follow, and its doc current."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.knowledge import precision
from rlcompat.rules import file_rules
from rlcompat.knowledge.targets import all_targets, resolve_target, sources

DOC = Path(__file__).resolve().parents[1] / "docs" / "precision.md"


def test_every_target_has_one_class_and_every_role_a_dtype_with_known_sources():
    known = sources()
    for target in all_targets():
        for role in precision.ROLES:
            choice = precision.choice(target, role)
            assert choice.dtype in ("float32", "float16", "bfloat16")
            assert choice.sources and set(choice.sources) <= set(known), (target.name, role)


@pytest.mark.parametrize("target,weights,autocast,rollout", [
    ("sm60", "float32", "float32", "float32"),
    ("sm61", "float32", "float32", "float32"),
    ("sm70", "float32", "float16", "float16"),
    ("sm75", "float32", "float16", "float16"),
    ("sm80", "float32", "bfloat16", "bfloat16"),
    ("sm90", "float32", "bfloat16", "bfloat16"),
])
def test_policy_per_target(target, weights, autocast, rollout):
    t = resolve_target(target)
    assert [precision.dtype_for(t, r) for r in precision.ROLES] == [weights, autocast, rollout]


def test_autocast_follows_bf16_hardware_and_weights_never_go_half():
    for t in all_targets():
        assert precision.dtype_for(t, "weights") == "float32"
        assert (precision.dtype_for(t, "autocast") == "bfloat16") == t.bf16_native


def test_unknown_role_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown precision role"):
        precision.dtype_for(resolve_target("sm70"), "optimizer")


@pytest.mark.parametrize("call,name,role", [
    ("from_pretrained", "torch_dtype", "weights"), ("to", "", "weights"), ("MixedPrecision", "param_dtype", "weights"),
    ("autocast", "dtype", "autocast"), ("BitsAndBytesConfig", "bnb_4bit_compute_dtype", "autocast"),
    ("Accelerator", "mixed_precision", "autocast"), ("LLM", "dtype", "rollout"), ("", "rollout_dtype", "rollout"),
])
def test_role_of_a_dtype_binding(call, name, role):
    assert precision.role_of_binding(call, name) == role


def test_overflow_models_name_their_sources_and_match_hub_ids():
    assert "qwen2" in precision.fp16_overflow_note("Qwen/Qwen2.5-0.5B-Instruct")
    assert precision.refuses_fp16("google/gemma-2-2b-it") and not precision.refuses_fp16("Qwen/Qwen2.5-7B")
    assert precision.fp16_overflow_note("meta-llama/Llama-3.2-1B") == ""
    for m in precision.fp16_overflow_models().values():
        assert m["sources"] and set(m["sources"]) <= set(sources())


def test_every_precision_error_names_existing_rules_and_every_new_rule_has_a_row():
    codes = {r.code for r in file_rules()}
    listed = {c for e in precision.errors().values() for c in e["rules"]}
    assert listed <= codes
    assert {f"RLC{n}" for n in range(108, 118)} <= listed


def test_precision_doc_is_current():
    text = DOC.read_text("utf-8")
    assert precision.START in text and precision.END in text
    assert text == precision.refresh(text), "docs/precision.md is stale: run `python -m rlcompat.knowledge.precision docs/precision.md`"


def test_target_view_shows_the_policy():
    from rlcompat.report.target_view import profile_text

    assert "Precision policy: weights float32, autocast float16, rollout float16" in profile_text(resolve_target("t4"))
    assert "weights float32, autocast float32, rollout float32" in profile_text(resolve_target("p40"))
